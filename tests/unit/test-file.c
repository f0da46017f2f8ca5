/*
 * test-file.c - scar_quote_text leaves printable UTF-8 alone and makes
 * every byte a terminal could act on visible; scar_open_input refuses
 * directories and, when asked, FIFOs and symbolic links, without waiting
 * for a FIFO's writer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scar/error.h"
#include "scar/file.h"
#include "unit.h"

static int quotes_to(const char *in, const char *want)
{
	char buf[256];
	size_t n = scar_quote_text(buf, sizeof(buf), in);

	if (n != strlen(want) || strcmp(buf, want)) {
		fprintf(stderr, "quoted to '%s', expected '%s'\n", buf, want);
		return 0;
	}
	return 1;
}

static void test_quote(void)
{
	char small[4];

	CHECK(quotes_to("w", "w"));
	CHECK(quotes_to("", ""));
	CHECK(quotes_to("caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93"));
	CHECK(quotes_to("\x1b]0;pwned\x07", "\\e]0;pwned\\x07"));
	CHECK(quotes_to("a\nx.ckpt: ok", "a\\nx.ckpt: ok"));
	CHECK(quotes_to("\r\t\x7f", "\\r\\t\\x7f"));
	CHECK(quotes_to("a\\b", "a\\\\b"));
	/* C1 control CSI as UTF-8 and as a lone byte, an overlong '/', a surrogate, a cut sequence */
	CHECK(quotes_to("\xc2\x9b" "2J", "\\xc2\\x9b2J"));
	CHECK(quotes_to("\x9b", "\\x9b"));
	CHECK(quotes_to("\xc0\xaf", "\\xc0\\xaf"));
	CHECK(quotes_to("\xed\xa0\x80", "\\xed\\xa0\\x80"));
	CHECK(quotes_to("\xe2\x9c", "\\xe2\\x9c"));
	/* truncation as snprintf: the length needed, a terminated prefix */
	CHECK(scar_quote_text(small, sizeof(small), "\x1b\x1b") == 4);
	CHECK(strcmp(small, "\\e\\") == 0);
}

static void test_fputs_long(void)
{
	char in[1000], *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	for (size_t i = 0; i < sizeof(in) - 1; i++)
		in[i] = i % 3 ? 'a' : '\x01';
	in[sizeof(in) - 1] = '\0';
	CHECK(f && scar_fputs_quoted(in, f) == 0);
	fclose(f);
	CHECK(len == 333 * 4 + 666);
	CHECK(out && strncmp(out, "\\x01aa\\x01", 10) == 0);
	free(out);
}

static void test_open(void)
{
	char dir[] = "/tmp/scar-test-file-XXXXXX", fifo[64], reg[64], link[64];
	struct scar_error e;
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(fifo, sizeof(fifo), "%s/f", dir);
	snprintf(reg, sizeof(reg), "%s/r", dir);
	snprintf(link, sizeof(link), "%s/l", dir);
	CHECK(mkfifo(fifo, 0600) == 0);
	fd = scar_open_input(reg, 0, &e);
	CHECK(fd == SCAR_EIO && e.errno_value == ENOENT);
	close(creat(reg, 0600));
	CHECK(symlink("r", link) == 0);

	fd = scar_open_input(reg, SCAR_OPEN_REGULAR, &e);
	CHECK(fd >= 0);
	close(fd);
	CHECK(scar_open_input(dir, 0, &e) == SCAR_EFORMAT);
	CHECK(strstr(e.msg, "a directory") != NULL);
	/* a FIFO without a writer: refused when a regular file is needed ... */
	CHECK(scar_open_input(fifo, SCAR_OPEN_REGULAR, &e) == SCAR_EFORMAT);
	CHECK(strstr(e.msg, "a FIFO") != NULL);
	/* ... else opened at once, and it reads as empty */
	fd = scar_open_input(fifo, 0, &e);
	CHECK(fd >= 0);
	if (fd >= 0) {
		char c;

		CHECK(read(fd, &c, 1) == 0);
		close(fd);
	}
	fd = scar_open_input(link, SCAR_OPEN_REGULAR, &e);
	CHECK(fd >= 0);
	close(fd);
	CHECK(scar_open_input(link, SCAR_OPEN_REGULAR | SCAR_OPEN_NOFOLLOW, &e) == SCAR_EFORMAT);
	unlink(link);
	unlink(reg);
	unlink(fifo);
	rmdir(dir);
}

static void test_utf8_valid(void)
{
	char *v;

	CHECK(scar_utf8_len("a") == 1 && scar_utf8_len("") == 0);
	CHECK(scar_utf8_len("\xc3\xa9") == 2 && scar_utf8_len("\xc0\xaf") == 0);
	CHECK(scar_utf8_len("\xed\xa0\x80") == 0);	/* a surrogate */
	CHECK(scar_utf8_len("\xf4\x90\x80\x80") == 0);	/* beyond U+10FFFF */
	v = scar_utf8_valid("a\xff" "b\xc3\xa9\xe2\x82");
	CHECK(v && strcmp(v, "a\xef\xbf\xbd" "b\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd") == 0);
	free(v);
	v = scar_utf8_valid("");
	CHECK(v && !*v);
	free(v);
}

int main(void)
{
	test_utf8_valid();
	test_quote();
	test_fputs_long();
	test_open();
	return unit_done("test-file");
}
