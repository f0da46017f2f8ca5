/*
 * subcmd.h - tools made of subcommands (scar-ckpt, scar-bound): the table of
 * commands, the main help, "help COMMAND", dispatch, and getopt_long with
 * the toolkit's messages. One copy, so that every such tool answers the same
 * way to the same mistake.
 */
#ifndef SCAR_SUBCMD_H
#define SCAR_SUBCMD_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);	/* argv[0] is the command's name */
	const char *synopsis;	/* after "prog NAME" */
	const char *summary;	/* one line, in the main help too */
	const char *options;	/* the option lines of "prog NAME --help" */
};

struct cli_command_set {
	const struct cli_command *commands;
	size_t count;
	const char *about;	/* the main help's description, ending in "\n" */
};

/*
 * The whole main() of a subcommand tool after cli_init(): global --help and
 * --version, "help [COMMAND]", then the command's run() with optind reset.
 * Returns what run() returns; usage errors exit 2 (cli_usage_error).
 */
int cli_command_main(const struct cli_command_set *set, int argc, char **argv);

/*
 * getopt_long for the running command: unknown options, a missing value and
 * a value given to a flag are usage errors naming the option, and 'h' prints
 * the command's help and exits 0. shortopts should start with ':' and hold
 * 'h'. Returns the option's value, or -1 at the end of the options.
 */
int cli_command_getopt(int argc, char **argv, const char *shortopts,
		       const struct option *longopts);

#endif
