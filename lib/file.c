/*
 * file.c - opening inputs, reading and writing whole buffers, replacing a
 * file atomically, and quoting text for a terminal (see scar/file.h). This
 * is the one place that makes temporaries, renames and syncs.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scar/file.h"

int scar_open_input(const char *path, int flags, struct scar_error *err)
{
	struct stat sb;
	int fd, oflags = O_RDONLY | O_CLOEXEC | O_NONBLOCK, fl;

	if (flags & SCAR_OPEN_NOFOLLOW)
		oflags |= O_NOFOLLOW;
	/*
	 * O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	 * writer, forever if none comes. It is cleared again below.
	 */
	fd = open(path, oflags);
	if (fd < 0) {
		if (errno == ELOOP && (flags & SCAR_OPEN_NOFOLLOW))
			return scar_error_set_at(err, SCAR_EFORMAT, path, -1, -1,
						 "'%s' is a symbolic link, not a regular file", path);
		return scar_error_set_errno(err, errno, path, "cannot open '%s'", path);
	}
	if (fstat(fd, &sb) < 0) {
		int e = errno;

		close(fd);
		return scar_error_set_errno(err, e, path, "cannot stat '%s'", path);
	}
	if (S_ISDIR(sb.st_mode) || ((flags & SCAR_OPEN_REGULAR) && !S_ISREG(sb.st_mode))) {
		close(fd);
		return scar_error_set_at(err, SCAR_EFORMAT, path, -1, -1, "'%s' is %s, not a regular file",
					 path, S_ISDIR(sb.st_mode) ? "a directory" :
					 S_ISFIFO(sb.st_mode) ? "a FIFO" :
					 S_ISSOCK(sb.st_mode) ? "a socket" :
					 S_ISCHR(sb.st_mode) ? "a character device" :
					 S_ISBLK(sb.st_mode) ? "a block device" : "a special file");
	}
	/* Reads block as usual from here: a pipe's writer is awaited, not polled. */
	if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int e = errno;

		close(fd);
		return scar_error_set_errno(err, e, path, "cannot read '%s'", path);
	}
	return fd;
}

/* ---- whole reads and writes ---- */

ssize_t scar_read_upto(int fd, void *buf, size_t n)
{
	unsigned char *p = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(fd, p + got, n - got > (1u << 30) ? (1u << 30) : n - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

int scar_read_full(int fd, void *buf, size_t n)
{
	ssize_t k = scar_read_upto(fd, buf, n);

	return k < 0 ? (int)k : k == (ssize_t)n;
}

int scar_write_all(int fd, const void *buf, size_t len, const char *name,
		   struct scar_error *err)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return scar_error_set_errno(err, errno, name, "cannot write '%s'",
						    name ? name : "-");
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* ---- replacing a file: the temporary beside it ---- */

#ifndef NAME_MAX
#define NAME_MAX 255
#endif

#define TMP_INFIX ".tmp."
#define TMP_XS "XXXXXX"

#ifndef NAME_MAX
#define NAME_MAX 255
#endif

/*
 * Temporaries of this process's writers, for the handler to remove when
 * SIGINT, SIGTERM or SIGHUP ends the process, and for exit(3) (a tool that
 * dies of an error mid-write). Fixed buffers: a handler may only call
 * async-signal-safe functions (getpid, unlink, raise). The pid keeps a
 * forked child from removing its parent's files.
 */
#define TMP_SLOTS 4
static char tmp_path[TMP_SLOTS][PATH_MAX];
/*
 * 0 free, 2 being filled, 1 in use. Lock-free atomics, so that a writer
 * thread (scar-train --async) and the main thread claim slots safely and
 * the handler, on whichever thread, reads them safely.
 */
static atomic_int tmp_used[TMP_SLOTS];
static pid_t tmp_pid[TMP_SLOTS];
static pthread_once_t tmp_once = PTHREAD_ONCE_INIT;
static const int tmp_signals[] = { SIGINT, SIGTERM, SIGHUP };

static void tmp_remove_all(void)
{
	pid_t me = getpid();

	for (int i = 0; i < TMP_SLOTS; i++)
		if (atomic_load(&tmp_used[i]) == 1 && tmp_pid[i] == me)
			unlink(tmp_path[i]);
}

static void tmp_on_signal(int sig)
{
	int e = errno;

	/*
	 * The handler runs with all three signals blocked (sa_mask): a second
	 * one, as timeout(1) sends to the child and then to its process group,
	 * waits instead of killing the process before the unlink. Then die of
	 * the signal as before: the raised one is delivered, with the default
	 * action, when the handler returns and the mask is restored.
	 */
	tmp_remove_all();
	signal(sig, SIG_DFL);
	raise(sig);
	errno = e;
}

static void tmp_install(void)
{
	atexit(tmp_remove_all);
	for (size_t k = 0; k < sizeof(tmp_signals) / sizeof(tmp_signals[0]); k++) {
		struct sigaction old, sa;

		/* A program that handles or ignores the signal keeps its way. */
		if (sigaction(tmp_signals[k], NULL, &old) < 0 ||
		    (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = tmp_on_signal;
		sigemptyset(&sa.sa_mask);
		for (size_t j = 0; j < sizeof(tmp_signals) / sizeof(tmp_signals[0]); j++)
			sigaddset(&sa.sa_mask, tmp_signals[j]);
		sigaction(tmp_signals[k], &sa, NULL);
	}
}

/* Register tmp for removal on a signal; the slot, or -1 when all are taken. */
static int tmp_register(const char *tmp)
{
	pthread_once(&tmp_once, tmp_install);
	if (strlen(tmp) >= PATH_MAX)
		return -1;
	for (int i = 0; i < TMP_SLOTS; i++) {
		int expect = 0;

		if (!atomic_compare_exchange_strong(&tmp_used[i], &expect, 2))
			continue;
		strcpy(tmp_path[i], tmp);
		tmp_pid[i] = getpid();
		/* The name is in place before the handler may look at it (seq_cst store). */
		atomic_store(&tmp_used[i], 1);
		return i;
	}
	return -1;
}

char *scar_tmp_name(const char *path)
{
	static const char suffix[] = TMP_INFIX TMP_XS;
	const char *base = strrchr(path, '/');
	size_t dlen, blen, keep = NAME_MAX - 1 - (sizeof(suffix) - 1);
	char *t;

	base = base ? base + 1 : path;
	dlen = (size_t)(base - path);
	blen = strlen(base);
	/* Cut the name so that the temporary's fits NAME_MAX whenever path's does. */
	if (blen > keep)
		blen = keep;
	t = malloc(dlen + 1 + blen + sizeof(suffix));
	if (t)
		sprintf(t, "%.*s.%.*s%s", (int)dlen, path, (int)blen, base, suffix);
	return t;
}

int scar_tmp_create(const char *path, char **tmp, struct scar_error *err)
{
	sigset_t block, saved;
	struct stat sb;
	mode_t mode;
	int fd, e;

	*tmp = scar_tmp_name(path);
	if (!*tmp)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	/*
	 * The signals wait while the file is made and registered: one arriving
	 * between the two would leave a temporary nothing removes.
	 */
	sigemptyset(&block);
	for (size_t k = 0; k < sizeof(tmp_signals) / sizeof(tmp_signals[0]); k++)
		sigaddset(&block, tmp_signals[k]);
	sigprocmask(SIG_BLOCK, &block, &saved);
	fd = mkstemp(*tmp);
	e = errno;
	if (fd >= 0)
		tmp_register(*tmp);
	sigprocmask(SIG_SETMASK, &saved, NULL);
	if (fd < 0) {
		int rc = scar_error_set_errno(err, e, path,
					      "cannot create a temporary file for '%s'", path);

		free(*tmp);
		*tmp = NULL;
		return rc;
	}
	/* mkstemp makes 0600: keep the mode of the file replaced, or what open(2) with 0666 would give. */
	if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
		mode = sb.st_mode & 0777;
	} else {
		mode = umask(0);
		umask(mode);
		mode = 0666 & ~mode;
	}
	if (fchmod(fd, mode) < 0) {
		int rc = scar_error_set_errno(err, errno, path, "cannot set the mode of '%s'", *tmp);

		close(fd);
		scar_tmp_done(*tmp, 1);
		*tmp = NULL;
		return rc;
	}
	return fd;
}

void scar_tmp_done(char *tmp, int remove)
{
	if (!tmp)
		return;
	if (remove)
		unlink(tmp);
	for (int i = 0; i < TMP_SLOTS; i++)
		if (atomic_load(&tmp_used[i]) == 1 && strcmp(tmp_path[i], tmp) == 0) {
			atomic_store(&tmp_used[i], 0);
			break;
		}
	free(tmp);
}


int scar_tmp_match(const char *entry, char *target, size_t cap)
{
	size_t n = strlen(entry), x = sizeof(TMP_XS) - 1, in = sizeof(TMP_INFIX) - 1, blen;

	/* ".BASE.tmp.XXXXXX": a dot, a base of at least one byte, the infix, six of mkstemp's characters */
	if (entry[0] != '.' || n < 1 + 1 + in + x || memcmp(entry + n - x - in, TMP_INFIX, in))
		return 0;
	for (size_t i = n - x; i < n; i++)
		if (!((entry[i] >= 'a' && entry[i] <= 'z') || (entry[i] >= 'A' && entry[i] <= 'Z') ||
		      (entry[i] >= '0' && entry[i] <= '9')))
			return 0;
	blen = n - x - in - 1;
	if (target && cap) {
		size_t k = blen < cap - 1 ? blen : cap - 1;

		memcpy(target, entry + 1, k);
		target[k] = '\0';
	}
	return 1;
}

/* The directory part of path ("." when none), malloc'd. */
static char *dir_of(const char *path)
{
	const char *sl = strrchr(path, '/');
	char *d;

	if (!sl)
		return strdup(".");
	if (sl == path)
		return strdup("/");
	d = malloc((size_t)(sl - path) + 1);
	if (d) {
		memcpy(d, path, (size_t)(sl - path));
		d[sl - path] = 0;
	}
	return d;
}

int scar_file_sync_dir(const char *path, struct scar_error *err)
{
	char *dir = dir_of(path);
	int fd, rc = 0;

	if (!dir)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Some file systems cannot sync a directory (EINVAL): nothing to report. */
	if (fd < 0 || (fsync(fd) < 0 && errno != EINVAL && errno != EROFS))
		rc = scar_error_set_errno(err, errno, dir, "cannot sync directory '%s'", dir);
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc;
}

int scar_file_is_special(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode);
}

int scar_file_replace(const char *path, int flags, scar_write_fn fn, void *ctx,
		      struct scar_error *err)
{
	char *tmp = NULL;
	int fd, rc;

	if (!path || strcmp(path, "-") == 0)
		return fn(STDOUT_FILENO, "(stdout)", ctx, err);
	if (scar_file_is_special(path)) {
		/*
		 * A device, FIFO or socket is written through, never renamed
		 * over: replacing /dev/null with a regular file (as root) or a
		 * FIFO with a file is not what anyone asked for.
		 */
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return scar_error_set_errno(err, errno, path, "cannot open '%s'", path);
		rc = fn(fd, path, ctx, err);
		if (close(fd) < 0 && rc >= 0)
			rc = scar_error_set_errno(err, errno, path, "cannot write '%s'", path);
		return rc < 0 ? rc : 0;
	}
	if ((fd = scar_tmp_create(path, &tmp, err)) < 0)
		return fd;
	if ((rc = fn(fd, path, ctx, err)) < 0)
		goto fail;
	/* Data on disk before the name points at it. */
	if ((flags & SCAR_REPLACE_SYNC) && fsync(fd) < 0) {
		rc = scar_error_set_errno(err, errno, path, "cannot sync '%s'", path);
		goto fail;
	}
	rc = close(fd);
	fd = -1;
	if (rc < 0) {
		rc = scar_error_set_errno(err, errno, path, "cannot write '%s'", path);
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		rc = scar_error_set_errno(err, errno, path, "cannot rename a temporary file to '%s'",
					  path);
		goto fail;
	}
	scar_tmp_done(tmp, 0);
	/* The file is in place; a directory that cannot be synced is an error all the same. */
	if (flags & SCAR_REPLACE_SYNC)
		return scar_file_sync_dir(path, err);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	scar_tmp_done(tmp, 1);
	return rc;
}

size_t scar_utf8_len(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n, i;
	unsigned cp;

	if (s[0] < 0x80)
		return s[0] != 0;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1fu;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07u;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)	/* also stops at the NUL */
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	/* overlong forms, surrogates and beyond U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

char *scar_utf8_valid(const char *s)
{
	size_t len = 0, n;
	char *out, *o;

	for (const char *p = s; *p; p += n ? n : 1)
		len += (n = scar_utf8_len(p)) ? n : 3;
	if (!(out = malloc(len + 1)))
		return NULL;
	o = out;
	for (const char *p = s; *p; p += n ? n : 1) {
		if ((n = scar_utf8_len(p))) {
			memcpy(o, p, n);
			o += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);	/* U+FFFD */
			o += 3;
		}
	}
	*o = '\0';
	return out;
}

/* Length of the valid UTF-8 sequence of a printable character at s, or 0. */
static size_t utf8_printable(const unsigned char *s)
{
	size_t n = scar_utf8_len((const char *)s);

	if (n == 1)
		return s[0] >= 0x20 && s[0] != 0x7f;
	/* the C1 controls U+0080..U+009F are encoded c2 80..c2 9f */
	if (n == 2 && s[0] == 0xc2 && s[1] <= 0x9f)
		return 0;
	return n;
}

size_t scar_quote_text(char *dst, size_t cap, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)src;
	size_t len = 0;

#define PUT(ch) do { if (len + 1 < cap) dst[len] = (char)(ch); len++; } while (0)
	while (*s) {
		size_t n = *s == '\\' ? 0 : utf8_printable(s);

		if (n) {
			for (; n; n--, s++)
				PUT(*s);
			continue;
		}
		PUT('\\');
		switch (*s) {
		case '\\': PUT('\\'); break;
		case '\n': PUT('n'); break;
		case '\r': PUT('r'); break;
		case '\t': PUT('t'); break;
		case 0x1b: PUT('e'); break;
		default:
			PUT('x');
			PUT(hex[*s >> 4]);
			PUT(hex[*s & 15]);
		}
		s++;
	}
#undef PUT
	if (cap)
		dst[len < cap ? len : cap - 1] = '\0';
	return len;
}

int scar_fputs_quoted(const char *s, FILE *f)
{
	char buf[256];
	size_t need = scar_quote_text(buf, sizeof(buf), s);

	if (need < sizeof(buf))
		return fputs(buf, f) == EOF ? EOF : 0;
	/* long: a character at a time through a small window */
	for (const char *p = s; *p; ) {
		char one[5] = { 0 };
		size_t n = utf8_printable((const unsigned char *)p);

		if (!n || *p == '\\')
			n = 1;
		memcpy(one, p, n);
		scar_quote_text(buf, sizeof(buf), one);
		if (fputs(buf, f) == EOF)
			return EOF;
		p += n;
	}
	return 0;
}
