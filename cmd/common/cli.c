/* cli.c - shared command-line helpers (see cli.h). */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "scar/arrayfile.h"
#include "scar/file.h"

const char *cli_progname = "scar";

/* Set on the way out after a fatal message: the exit-time check of stdout
 * then stays quiet, so one failure gives one message. */
static int dying;

/* Set on all but one of several identical processes (MPI ranks). */
static int usage_quiet;

/* Run before any message: takes a progress line off the terminal. */
static void (*before_message)(void);

void cli_set_message_hook(void (*fn)(void))
{
	before_message = fn;
}

void cli_quiet_usage_errors(void)
{
	usage_quiet = 1;
}

static void check_stdout_at_exit(void)
{
	if (dying) {
		fflush(stdout);
		return;
	}
	cli_flush_stdout();
}

void cli_init(const char *progname)
{
	const char *slash = strrchr(progname, '/');

	cli_progname = slash ? slash + 1 : progname;
	signal(SIGPIPE, SIG_IGN);
	atexit(check_stdout_at_exit);
}

/*
 * Every message goes through the terminal quoting of scar/file.h: names in
 * it may come from a file (a tensor called "\e]0;x\a" must not retitle the
 * window, nor one holding "\n" forge a line of its own).
 */
static void vmsg(const char *fmt, va_list ap)
{
	char buf[2048];

	if (before_message)
		before_message();
	fflush(stdout);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "%s: ", cli_progname);
	scar_fputs_quoted(buf, stderr);
	fputc('\n', stderr);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void cli_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	dying = 1;
	exit(EXIT_TROUBLE);
}

void cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	if (!usage_quiet) {
		va_start(ap, fmt);
		vmsg(fmt, ap);
		va_end(ap);
		fprintf(stderr, "try '%s --help'\n", cli_progname);
	}
	dying = 1;
	exit(EXIT_TROUBLE);
}

/* Does the message already name the file, as the library quotes it: 'file'? */
static int names_file(const struct scar_error *e)
{
	size_t n = strlen(e->file);
	const char *p;

	for (p = strchr(e->msg, '\''); p; p = strchr(p + 1, '\''))
		if (strncmp(p + 1, e->file, n) == 0 && p[n + 1] == '\'')
			return 1;
	return 0;
}

void cli_warn_error(const struct scar_error *e)
{
	int named = e->file[0] && names_file(e);

	if (e->file[0] && e->line >= 0)
		cli_warn("%s:%lld: %s", e->file, (long long)e->line, e->msg);
	else if (e->file[0] && e->offset >= 0 && !named)
		cli_warn("'%s': offset %lld: %s", e->file, (long long)e->offset, e->msg);
	else if (e->file[0] && !named)
		cli_warn("'%s': %s", e->file, e->msg);
	else
		cli_warn("%s", e->msg[0] ? e->msg : scar_strerror(e->code));
}

void cli_die_error(const struct scar_error *e)
{
	dying = 1;
	if (e->code == SCAR_EIO && e->errno_value == EPIPE)
		exit(EXIT_TROUBLE);	/* the reader went away: end quietly */
	cli_warn_error(e);
	exit(EXIT_TROUBLE);
}

static void need_value(const char *opt, const char *s)
{
	if (!s || !*s)
		cli_usage_error("option '%s' needs a value", opt);
}

void cli_check_list(const char *opt, const char *s, const char *seps)
{
	size_t n;

	need_value(opt, s);
	n = strlen(s);
	/* s[0] and s[n - 1] are not NUL, which strchr would find in seps */
	if (strchr(seps, s[0]) || strchr(seps, s[n - 1]))
		goto bad;
	for (size_t i = 0; i + 1 < n; i++)
		if (strchr(seps, s[i]) && strchr(seps, s[i + 1]))
			goto bad;
	return;
bad:
	cli_usage_error("option '%s': '%s' has an empty item", opt, s);
}

uint64_t cli_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	need_value(opt, s);
	if (*s == '-' || *s == '+' || isspace((unsigned char)*s))
		cli_usage_error("option '%s': '%s' is not a non-negative integer", opt, s);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end || errno == ERANGE)
		cli_usage_error("option '%s': '%s' is not a non-negative integer", opt, s);
	if (v < min || v > max)
		cli_usage_error("option '%s': %s is out of range [%llu, %llu]", opt, s,
				(unsigned long long)min, (unsigned long long)max);
	return v;
}

int64_t cli_parse_i64(const char *opt, const char *s, int64_t min, int64_t max)
{
	char *end;
	long long v;

	need_value(opt, s);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || errno == ERANGE || isspace((unsigned char)*s))
		cli_usage_error("option '%s': '%s' is not an integer", opt, s);
	if (v < min || v > max)
		cli_usage_error("option '%s': %s is out of range [%lld, %lld]", opt, s,
				(long long)min, (long long)max);
	return v;
}

double cli_parse_double(const char *opt, const char *s, double min, double max)
{
	char *end;
	double v;

	need_value(opt, s);
	/* decimal only: strtod would also take spaces, hex, "inf" and "nan" */
	if (s[strspn(s, "0123456789.eE+-")])
		cli_usage_error("option '%s': '%s' is not a finite number", opt, s);
	errno = 0;
	v = strtod(s, &end);
	if (*end || !isfinite(v))
		cli_usage_error("option '%s': '%s' is not a finite number", opt, s);
	if (errno == ERANGE)	/* underflow: 0 or subnormal, not the number given */
		cli_usage_error("option '%s': '%s' is too small (nonzero numbers start at %g)",
				opt, s, DBL_MIN);
	if (v < min || v > max)
		cli_usage_error("option '%s': %s is out of range [%g, %g]", opt, s, min, max);
	return v;
}

int cli_is_stdio(const char *path)
{
	return !path || strcmp(path, "-") == 0;
}

void cli_refuse_binary_tty(void)
{
	if (isatty(STDOUT_FILENO))
		cli_die("refusing to write a binary checkpoint to a terminal; redirect stdout or give a file");
}

void cli_refuse_tty_stdin(void)
{
	if (isatty(STDIN_FILENO))
		cli_usage_error("no input: give a file, or pipe a checkpoint into stdin");
}

int cli_progress_ok(int stdout_busy)
{
	struct stat o, e;

	if (!isatty(STDERR_FILENO))
		return 0;
	/* one terminal for both: the line would cut into the output */
	return !(stdout_busy && isatty(STDOUT_FILENO) && fstat(STDOUT_FILENO, &o) == 0 &&
		 fstat(STDERR_FILENO, &e) == 0 && o.st_dev == e.st_dev && o.st_ino == e.st_ino);
}

int cli_terminal_width(void)
{
	struct winsize w;

	return ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0 ? w.ws_col : 80;
}

void cli_check_path_arg(const char *opt, const char *path, const char *dash)
{
	struct stat sb;

	if (path[0] != '-' || !path[1] || lstat(path, &sb) == 0)
		return;
	if (dash)
		cli_usage_error("option '%s' takes a path ('-' for %s), not '%s', which looks like an "
				"option; for a file of that name write './%s'", opt, dash, path, path);
	cli_usage_error("option '%s' takes a path, not '%s', which looks like an option; for a "
			"file of that name write './%s'", opt, path, path);
}

/* path with its .npy or .safetensors suffix turned into .ckpt, for a command to suggest */
static void ckpt_name(const char *path, char *out, size_t n)
{
	const char *base = strrchr(path, '/'), *dot;
	size_t stem;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	stem = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	snprintf(out, n, "%.*s.ckpt", (int)(stem < 200 ? stem : 200), base);
}

void cli_hint_not_checkpoint(const char *path, int resume)
{
	char head[64], out[256];
	ssize_t n;
	int fd, kind;

	if (cli_is_stdio(path))
		return;
	ckpt_name(path, out, sizeof(out));
	if ((kind = scar_array_sniff_file(path))) {
		const char *what = kind == SCAR_ARRAY_NPY ? "a NumPy .npy array" : "a safetensors file";

		if (!resume)
			cli_warn("'%s' is %s; 'scar-ckpt import -o %s %s' makes a checkpoint of it",
				 path, what, out, path);
		else if (kind == SCAR_ARRAY_NPY)	/* one array: the model and its name are not in it */
			cli_warn("'%s' is %s, not a checkpoint; 'scar-ckpt import --model M --name TENSOR "
				 "-o %s %s' makes one, which --resume takes when it holds all of model "
				 "M's tensors", path, what, out, path);
		else
			cli_warn("'%s' is %s, not a checkpoint; 'scar-ckpt import -o %s %s' makes one, "
				 "which --resume takes when it holds all of a model's tensors (as "
				 "'scar-ckpt export --format safetensors' writes them)", path, what, out, path);
		return;
	}
	/* an event stream given for a checkpoint: its first record names the format */
	if ((fd = scar_open_input(path, SCAR_OPEN_REGULAR, NULL)) < 0)
		return;
	n = scar_read_upto(fd, head, sizeof(head) - 1);
	close(fd);
	head[n > 0 ? n : 0] = 0;
	if (head[0] == '{' && strstr(head, "\"scar-events\""))
		cli_warn("'%s' is a scar-events stream, not a checkpoint; scar-train's --save and "
			 "--checkpoint-dir write checkpoints", path);
}

unsigned cli_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > CLI_THREADS_MAX ? CLI_THREADS_MAX : (unsigned)n;
}

void cli_version(void)
{
	printf("%s %s\n", cli_progname, SCAR_VERSION);
	exit(0);
}

void cli_flush_stdout(void)
{
	int e;

	if (fflush(stdout) == 0 && !ferror(stdout))
		return;
	/* errno is the failed write's, unless nothing set it */
	e = errno ? errno : EIO;
	if (e == EPIPE)
		_exit(EXIT_TROUBLE);
	if (before_message)
		before_message();
	fprintf(stderr, "%s: cannot write '(stdout)': %s\n", cli_progname, strerror(e));
	_exit(EXIT_TROUBLE);
}
