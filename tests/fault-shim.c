/*
 * fault-shim.c - an LD_PRELOAD library that makes chosen I/O calls fail, to
 * test that every tool reports I/O errors and never leaves a damaged file.
 *
 *   SCAR_FAULT="RULE[,RULE...]"   RULE is CALL:WHAT:WHEN
 *     CALL  open (open, openat, creat, fopen, mkstemp), read (read, pread),
 *           write (write, pwrite), fsync (fsync, fdatasync), rename
 *           (rename, renameat), close (close, fclose)
 *     WHAT  an errno name (ENOSPC, EIO, EINTR, EACCES, EPIPE, EDQUOT, EROFS,
 *           ENOENT, EMFILE, EBADF, EFBIG, EAGAIN), "short": read or write
 *           only half of the bytes asked for (at least one), or "delayMS":
 *           sleep MS milliseconds, then make the call (a slow disk)
 *     WHEN  N (only the Nth eligible call of that kind, 1-based), N+ (the
 *           Nth and every later one) or * (every one)
 *   SCAR_FAULT_STDIO=1   descriptors 0, 1 and 2 are eligible too (default not)
 *   SCAR_FAULT_PATH=S    only paths containing S, and descriptors opened
 *                        from such paths, are eligible
 *   SCAR_FAULT_LOG=FILE  append one line per injected fault ("write:ENOSPC
 *                        #3 fd 5"), so a test can tell that a fault fired
 *
 * fwrite gets the hard errors of write rules (not short or EINTR). Stdio's
 * other internal reads and writes (fread, getline, fprintf, fflush) and
 * memory maps are not intercepted: glibc calls its internal entry points.
 * A failing close or fclose still closes the descriptor, as Linux does.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum { C_OPEN, C_READ, C_WRITE, C_FSYNC, C_RENAME, C_CLOSE, C_N };
static const char *const class_names[C_N] = {
	"open", "read", "write", "fsync", "rename", "close",
};

#define SHORT_FAULT (-1)
#define MAX_RULES 16
#define MAX_FDS 4096

struct rule {
	int cls;
	int err;		/* errno, or SHORT_FAULT */
	unsigned long nth;	/* 0 = every call */
	int onward;		/* N+ */
	unsigned long delay_ms;	/* "delayMS": no fault, a pause */
};

static struct rule rules[MAX_RULES];
static int nrules = -1;		/* -1 = not parsed yet */
static unsigned long counts[C_N];
static int with_stdio;
static const char *path_filter;
static const char *log_path;
static unsigned char fd_match[MAX_FDS];	/* opened from a path matching the filter */

static const struct {
	const char *name;
	int value;
} errnos[] = {
	{ "EACCES", EACCES }, { "EAGAIN", EAGAIN }, { "EBADF", EBADF },
	{ "EDQUOT", EDQUOT }, { "EFBIG", EFBIG }, { "EINTR", EINTR },
	{ "EIO", EIO }, { "EMFILE", EMFILE }, { "ENOENT", ENOENT },
	{ "ENOSPC", ENOSPC }, { "EPIPE", EPIPE }, { "EROFS", EROFS },
	{ "EPERM", EPERM }, { "ENOMEM", ENOMEM },
};

static void *next_fn(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		static const char msg[] = "fault-shim: a libc symbol is missing\n";
		ssize_t w = write(2, msg, sizeof(msg) - 1);

		(void)w;
		abort();
	}
	return p;
}

#define REAL(ret, name, args) \
	static ret (*real_##name) args; \
	if (!real_##name) \
		real_##name = (ret (*) args)next_fn(#name)

static void parse_rules(void)
{
	const char *spec = getenv("SCAR_FAULT");
	char buf[1024], *save = NULL, *tok;

	nrules = 0;
	with_stdio = getenv("SCAR_FAULT_STDIO") && strcmp(getenv("SCAR_FAULT_STDIO"), "1") == 0;
	path_filter = getenv("SCAR_FAULT_PATH");
	if (path_filter && !*path_filter)
		path_filter = NULL;
	log_path = getenv("SCAR_FAULT_LOG");
	if (!spec || !*spec)
		return;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok && nrules < MAX_RULES;
	     tok = strtok_r(NULL, ",", &save)) {
		char *c1 = strchr(tok, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		struct rule r = { -1, 0, 0, 0, 0 };
		size_t i;

		if (!c1 || !c2)
			goto bad;
		*c1 = *c2 = 0;
		for (i = 0; i < C_N; i++)
			if (strcmp(tok, class_names[i]) == 0)
				r.cls = (int)i;
		if (r.cls < 0)
			goto bad;
		if (strcmp(c1 + 1, "short") == 0) {
			r.err = SHORT_FAULT;
		} else if (strncmp(c1 + 1, "delay", 5) == 0) {
			char *end;

			r.delay_ms = strtoul(c1 + 6, &end, 10);
			if (*end || r.delay_ms == 0 || r.delay_ms > 60000)
				goto bad;
		} else {
			for (i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
				if (strcmp(c1 + 1, errnos[i].name) == 0)
					r.err = errnos[i].value;
			if (!r.err)
				goto bad;
		}
		if (strcmp(c2 + 1, "*") == 0) {
			r.nth = 0;
		} else {
			char *end;

			r.nth = strtoul(c2 + 1, &end, 10);
			if (*end == '+') {
				r.onward = 1;
				end++;
			}
			if (*end || r.nth == 0)
				goto bad;
		}
		rules[nrules++] = r;
		continue;
bad:
		{
			static const char msg[] = "fault-shim: bad SCAR_FAULT rule\n";
			ssize_t w = write(2, msg, sizeof(msg) - 1);

			(void)w;
			_exit(125);
		}
	}
}

static void log_fault(int cls, const char *what, unsigned long n, int fd, const char *path)
{
	char line[512];
	int len, lfd;
	REAL(int, open, (const char *, int, ...));
	REAL(ssize_t, write, (int, const void *, size_t));
	REAL(int, close, (int));

	if (!log_path)
		return;
	if (path)
		len = snprintf(line, sizeof(line), "%s:%s #%lu '%s'\n", class_names[cls], what, n, path);
	else
		len = snprintf(line, sizeof(line), "%s:%s #%lu fd %d\n", class_names[cls], what, n, fd);
	if (len < 0 || (size_t)len >= sizeof(line))
		len = (int)sizeof(line) - 1;
	lfd = real_open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (lfd < 0)
		return;
	if (real_write(lfd, line, (size_t)len) < 0) {
		/* nothing to be done: the log is best effort */
	}
	real_close(lfd);
}

static const char *err_name(int e)
{
	if (e == SHORT_FAULT)
		return "short";
	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (errnos[i].value == e)
			return errnos[i].name;
	return "?";
}

static int path_ok(const char *p)
{
	return !path_filter || (p && strstr(p, path_filter));
}

static int fd_ok(int fd)
{
	if (fd < 0)
		return 0;
	if (fd <= 2 && !with_stdio)
		return 0;
	if (path_filter)
		return fd < MAX_FDS && fd_match[fd];
	return 1;
}

/*
 * Count an eligible call of class cls and return the fault to inject: an
 * errno, SHORT_FAULT, or 0 for none.
 */
static int decide_as(int cls, int fd, const char *path, int retryable)
{
	unsigned long n;

	if (nrules < 0)
		parse_rules();
	if (!nrules)
		return 0;
	if (path ? !path_ok(path) : !fd_ok(fd))
		return 0;
	n = __atomic_add_fetch(&counts[cls], 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < nrules; i++) {
		const struct rule *r = &rules[i];

		if (r->cls != cls)
			continue;
		if (r->nth == 0 || n == r->nth || (r->onward && n > r->nth)) {
			if (r->delay_ms) {
				struct timespec ts = { (time_t)(r->delay_ms / 1000),
						       (long)(r->delay_ms % 1000) * 1000000L };

				log_fault(cls, "delay", n, fd, path);
				while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
					;
				return 0;
			}
			if (!retryable && (r->err == SHORT_FAULT || r->err == EINTR))
				return 0;
			log_fault(cls, err_name(r->err), n, fd, path);
			return r->err;
		}
	}
	return 0;
}

static int decide(int cls, int fd, const char *path)
{
	return decide_as(cls, fd, path, 1);
}

static void track(int fd, const char *path)
{
	if (fd >= 0 && fd < MAX_FDS)
		fd_match[fd] = path_filter && path && strstr(path, path_filter) ? 1 : 0;
}

/* ---- open ---- */

static int open_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ? va_arg(ap, int) : 0;
}

#define OPEN_LIKE(name, real_args, call_args) \
int name real_args \
{ \
	va_list ap; \
	int mode, fd, f; \
	REAL(int, name, real_args); \
	va_start(ap, flags); \
	mode = open_mode(flags, ap); \
	va_end(ap); \
	if ((f = decide(C_OPEN, -1, path)) > 0) { \
		errno = f; \
		return -1; \
	} \
	fd = real_##name call_args; \
	track(fd, path); \
	return fd; \
}

OPEN_LIKE(open, (const char *path, int flags, ...), (path, flags, mode))
OPEN_LIKE(open64, (const char *path, int flags, ...), (path, flags, mode))

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	int mode, fd, f;
	REAL(int, openat, (int, const char *, int, ...));

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	if ((f = decide(C_OPEN, -1, path)) > 0) {
		errno = f;
		return -1;
	}
	fd = real_openat(dirfd, path, flags, mode);
	track(fd, path);
	return fd;
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	int mode, fd, f;
	REAL(int, openat64, (int, const char *, int, ...));

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	if ((f = decide(C_OPEN, -1, path)) > 0) {
		errno = f;
		return -1;
	}
	fd = real_openat64(dirfd, path, flags, mode);
	track(fd, path);
	return fd;
}

int creat(const char *path, mode_t mode)
{
	return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

static FILE *fopen_common(FILE *(*real)(const char *, const char *), const char *path,
			  const char *mode)
{
	FILE *f;
	int e;

	if ((e = decide(C_OPEN, -1, path)) > 0) {
		errno = e;
		return NULL;
	}
	f = real(path, mode);
	if (f)
		track(fileno(f), path);
	return f;
}

FILE *fopen(const char *path, const char *mode)
{
	REAL(FILE *, fopen, (const char *, const char *));
	return fopen_common(real_fopen, path, mode);
}

FILE *fopen64(const char *path, const char *mode)
{
	REAL(FILE *, fopen64, (const char *, const char *));
	return fopen_common(real_fopen64, path, mode);
}

int mkstemp(char *tmpl)
{
	int fd, e;
	REAL(int, mkstemp, (char *));

	if ((e = decide(C_OPEN, -1, tmpl)) > 0) {
		errno = e;
		return -1;
	}
	fd = real_mkstemp(tmpl);
	track(fd, tmpl);
	return fd;
}

int mkostemp(char *tmpl, int flags)
{
	int fd, e;
	REAL(int, mkostemp, (char *, int));

	if ((e = decide(C_OPEN, -1, tmpl)) > 0) {
		errno = e;
		return -1;
	}
	fd = real_mkostemp(tmpl, flags);
	track(fd, tmpl);
	return fd;
}

/* ---- read and write ---- */

static size_t shorter(size_t n)
{
	return n > 1 ? n / 2 : n;
}

ssize_t read(int fd, void *buf, size_t n)
{
	int f;
	REAL(ssize_t, read, (int, void *, size_t));

	f = decide(C_READ, fd, NULL);
	if (f == SHORT_FAULT)
		return real_read(fd, buf, shorter(n));
	if (f) {
		errno = f;
		return -1;
	}
	return real_read(fd, buf, n);
}

#define PREAD_LIKE(name, ptr) \
ssize_t name(int fd, ptr buf, size_t n, off_t off) \
{ \
	int f; \
	REAL(ssize_t, name, (int, ptr, size_t, off_t)); \
	f = decide(cls_of_##name, fd, NULL); \
	if (f == SHORT_FAULT) \
		return real_##name(fd, buf, shorter(n), off); \
	if (f) { \
		errno = f; \
		return -1; \
	} \
	return real_##name(fd, buf, n, off); \
}

enum { cls_of_pread = C_READ, cls_of_pread64 = C_READ, cls_of_pwrite = C_WRITE,
       cls_of_pwrite64 = C_WRITE };
PREAD_LIKE(pread, void *)
PREAD_LIKE(pread64, void *)
PREAD_LIKE(pwrite, const void *)
PREAD_LIKE(pwrite64, const void *)

ssize_t write(int fd, const void *buf, size_t n)
{
	int f;
	REAL(ssize_t, write, (int, const void *, size_t));

	f = decide(C_WRITE, fd, NULL);
	if (f == SHORT_FAULT)
		return real_write(fd, buf, shorter(n));
	if (f) {
		errno = f;
		return -1;
	}
	return real_write(fd, buf, n);
}

/*
 * fwrite: stdio retries nothing itself, so only hard errors are injected
 * (short and EINTR rules let it through). The stream's error indicator is
 * set the way glibc's own failing write sets it, so ferror() sees it.
 */
size_t fwrite(const void *buf, size_t size, size_t n, FILE *stream)
{
	int f;
	REAL(size_t, fwrite, (const void *, size_t, size_t, FILE *));

	f = decide_as(C_WRITE, fileno(stream), NULL, 0);
	if (f > 0 && size && n) {
		stream->_flags |= 0x20;	/* _IO_ERR_SEEN */
		errno = f;
		return 0;
	}
	return real_fwrite(buf, size, n, stream);
}

/* ---- fsync, rename, close ---- */

int fsync(int fd)
{
	int f;
	REAL(int, fsync, (int));

	if ((f = decide(C_FSYNC, fd, NULL)) > 0) {
		errno = f;
		return -1;
	}
	return real_fsync(fd);
}

int fdatasync(int fd)
{
	int f;
	REAL(int, fdatasync, (int));

	if ((f = decide(C_FSYNC, fd, NULL)) > 0) {
		errno = f;
		return -1;
	}
	return real_fdatasync(fd);
}

int rename(const char *from, const char *to)
{
	int f;
	REAL(int, rename, (const char *, const char *));

	if ((f = decide(C_RENAME, -1, path_ok(from) ? from : to)) > 0) {
		errno = f;
		return -1;
	}
	return real_rename(from, to);
}

int renameat(int fromfd, const char *from, int tofd, const char *to)
{
	int f;
	REAL(int, renameat, (int, const char *, int, const char *));

	if ((f = decide(C_RENAME, -1, path_ok(from) ? from : to)) > 0) {
		errno = f;
		return -1;
	}
	return real_renameat(fromfd, from, tofd, to);
}

int close(int fd)
{
	int f, rc;
	REAL(int, close, (int));

	f = decide(C_CLOSE, fd, NULL);
	if (fd >= 0 && fd < MAX_FDS)
		fd_match[fd] = 0;
	rc = real_close(fd);
	if (f > 0 && rc == 0) {
		errno = f;
		return -1;
	}
	return rc;
}

int fclose(FILE *stream)
{
	int f, fd = fileno(stream), rc;
	REAL(int, fclose, (FILE *));

	f = decide(C_CLOSE, fd, NULL);
	if (fd >= 0 && fd < MAX_FDS)
		fd_match[fd] = 0;
	rc = real_fclose(stream);
	if (f > 0 && rc == 0) {
		errno = f;
		return EOF;
	}
	return rc;
}
