/*
 * subcmd.c - main() and option parsing for the tools made of subcommands.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "subcmd.h"

static const struct cli_command_set *command_set;
static const struct cli_command *current;

static const struct option main_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static _Noreturn void command_help(const struct cli_command *c)
{
	printf("usage: %s %s %s\n\n%s\n\n%s", cli_progname, c->name, c->synopsis, c->summary,
	       c->options);
	exit(0);
}

static void main_help(FILE *f)
{
	const struct cli_command_set *s = command_set;
	int width = 0;
	size_t i;

	for (i = 0; i < s->count; i++)
		if ((int)strlen(s->commands[i].name) > width)
			width = (int)strlen(s->commands[i].name);
	fprintf(f, "usage: %s COMMAND [OPTION...] [OPERAND...]\n"
		"       %s help COMMAND\n"
		"       %s --help | --version\n\n"
		"%s\ncommands:\n", cli_progname, cli_progname, cli_progname, s->about);
	for (i = 0; i < s->count; i++)
		fprintf(f, "  %-*s %s\n", width + 1, s->commands[i].name, s->commands[i].summary);
	fprintf(f, "\n  --help          show this help and exit\n"
		"  --version       show the version and exit\n\n"
		"See '%s help COMMAND' and %s(1).\n", cli_progname, cli_progname);
}

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; i < command_set->count; i++)
		if (strcmp(command_set->commands[i].name, name) == 0)
			return &command_set->commands[i];
	return NULL;
}

/* The message for an option getopt_long refused; arg is the word it read. */
static _Noreturn void bad_option(int c, const char *arg)
{
	if (c == ':')
		cli_usage_error("option '%s' needs a value", arg);
	if (strncmp(arg, "--", 2) == 0 && strchr(arg, '='))
		cli_usage_error("option '%.*s' takes no value", (int)(strchr(arg, '=') - arg), arg);
	if (strncmp(arg, "--", 2) == 0 || !optopt)
		cli_usage_error("unknown option '%s'", arg);
	cli_usage_error("unknown option '-%c'", optopt);
}

int cli_command_main(const struct cli_command_set *set, int argc, char **argv)
{
	const struct cli_command *cmd;
	int c;

	command_set = set;
	opterr = 0;
	if (argc < 2) {
		main_help(stderr);
		return EXIT_TROUBLE;
	}
	if (argv[1][0] == '-') {
		/* Global options come before the command; stop at the first operand. */
		while ((c = getopt_long(argc, argv, "+:hV", main_opts, NULL)) != -1) {
			if (c == 'h') {
				main_help(stdout);
				return 0;
			}
			if (c == 'V')
				cli_version();
			bad_option(c, argv[optind - 1]);
		}
		if (optind >= argc)
			cli_usage_error("missing command");
		cli_usage_error("options go after the command: '%s'", argv[optind]);
	}
	if (strcmp(argv[1], "help") == 0) {
		if (argc == 2) {
			main_help(stdout);
			return 0;
		}
		if (argc > 3)
			cli_usage_error("help takes one COMMAND");
		if (!(cmd = find_command(argv[2])))
			cli_usage_error("unknown command '%s'", argv[2]);
		command_help(cmd);
	}
	if (!(cmd = find_command(argv[1])))
		cli_usage_error("unknown command '%s'", argv[1]);
	current = cmd;
	optind = 1;
	return cmd->run(argc - 1, argv + 1);
}

int cli_command_getopt(int argc, char **argv, const char *shortopts,
		       const struct option *longopts)
{
	int c = getopt_long(argc, argv, shortopts, longopts, NULL);

	if (c == '?' || c == ':')
		bad_option(c, argv[optind - 1]);
	if (c == 'h')
		command_help(current);
	return c;
}
