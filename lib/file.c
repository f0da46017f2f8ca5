/* file.c - opening inputs and quoting text for a terminal (see scar/file.h). */
#include <errno.h>
#include <fcntl.h>
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
