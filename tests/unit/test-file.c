/*
 * test-file.c - scar_quote_text leaves printable UTF-8 alone and makes
 * every byte a terminal could act on visible; scar_open_input refuses
 * directories and, when asked, FIFOs and symbolic links, without waiting
 * for a FIFO's writer; scar_file_replace leaves the target and no
 * temporary behind when the write fails, writes a FIFO in place, keeps a
 * regular target's mode; scar_tmp_match knows its temporaries.
 */
#include <dirent.h>
#include <sys/wait.h>
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

/* ---- scar_file_replace ---- */

struct text {
	const char *s;
	int fail;	/* fail after writing */
};

static int put_text(int fd, const char *name, void *ctx, struct scar_error *err)
{
	struct text *t = ctx;
	int rc = scar_write_all(fd, t->s, strlen(t->s), name, err);

	if (rc == 0 && t->fail)
		rc = scar_error_set(err, SCAR_EIO, "refused on purpose");
	return rc;
}

static int file_is(const char *path, const char *want)
{
	char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return 0;
	buf[n] = 0;
	return strcmp(buf, want) == 0;
}

/* Entries of dir other than . and .. whose name holds ".tmp." */
static int temporaries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += scar_tmp_match(de->d_name, NULL, 0) || strstr(de->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	return n;
}

static void test_replace(void)
{
	char dir[] = "/tmp/scar-test-replace-XXXXXX", reg[64], fifo[64], sub[64];
	struct text ok = { "new\n", 0 }, bad = { "half", 1 };
	struct scar_error e;
	struct stat sb;
	mode_t um = umask(022);
	pid_t pid;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(reg, sizeof(reg), "%s/r", dir);
	snprintf(fifo, sizeof(fifo), "%s/f", dir);
	snprintf(sub, sizeof(sub), "%s/nosuch/x", dir);

	/* a new file: 0666 & ~umask, and synced or not, the same bytes */
	CHECK(scar_file_replace(reg, SCAR_REPLACE_SYNC, put_text, &ok, &e) == 0);
	CHECK(file_is(reg, "new\n"));
	CHECK(stat(reg, &sb) == 0 && (sb.st_mode & 0777) == 0644);
	/* an existing regular file keeps its mode */
	CHECK(chmod(reg, 0604) == 0);
	ok.s = "newer\n";
	CHECK(scar_file_replace(reg, 0, put_text, &ok, &e) == 0);
	CHECK(file_is(reg, "newer\n"));
	CHECK(stat(reg, &sb) == 0 && (sb.st_mode & 0777) == 0604);
	/* a write that fails leaves the target as it was and no temporary */
	scar_error_clear(&e);
	CHECK(scar_file_replace(reg, SCAR_REPLACE_SYNC, put_text, &bad, &e) == SCAR_EIO);
	CHECK(strstr(e.msg, "refused on purpose") != NULL);
	CHECK(file_is(reg, "newer\n"));
	CHECK(temporaries(dir) == 0);
	/* no directory to put the temporary in: an error naming the target */
	CHECK(scar_file_replace(sub, SCAR_REPLACE_SYNC, put_text, &ok, &e) == SCAR_EIO);
	CHECK(strstr(e.msg, sub) != NULL);

	/* a FIFO is written in place: its reader gets the bytes, and it stays a FIFO */
	CHECK(mkfifo(fifo, 0600) == 0);
	pid = fork();
	if (pid == 0) {
		_exit(file_is(fifo, "newer\n") ? 0 : 1);
	} else if (pid > 0) {
		int status = -1;

		CHECK(scar_file_replace(fifo, SCAR_REPLACE_SYNC, put_text, &ok, &e) == 0);
		CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK(lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode));
		CHECK(temporaries(dir) == 0);
	}
	/* a character device: /dev/null takes the bytes and stays itself */
	CHECK(scar_file_replace("/dev/null", SCAR_REPLACE_SYNC, put_text, &ok, &e) == 0);
	CHECK(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode));
	unlink(fifo);
	unlink(reg);
	rmdir(dir);
	umask(um);
}

static void test_tmp_names(void)
{
	char base[300], *t;

	t = scar_tmp_name("d/ckpt-0000000001.ckpt");
	CHECK(t && strncmp(t, "d/.ckpt-0000000001.ckpt.tmp.", 28) == 0 && strlen(t) == 34);
	/* mkstemp's template is what scar_tmp_match knows, once filled in */
	if (t) {
		memcpy(t + 28, "a1B2c3", 6);
		CHECK(scar_tmp_match(t + 2, base, sizeof(base)) == 1);
		CHECK(strcmp(base, "ckpt-0000000001.ckpt") == 0);
	}
	free(t);
	CHECK(scar_tmp_match(".x.manifest.tmp.Zz09aa", base, sizeof(base)) && !strcmp(base, "x.manifest"));
	CHECK(!scar_tmp_match("x.ckpt.tmp.a1B2c3", NULL, 0));	/* no leading dot */
	CHECK(!scar_tmp_match(".x.ckpt.tmp.a1B2c", NULL, 0));	/* five */
	CHECK(!scar_tmp_match(".x.ckpt.tmp.a1B2c-", NULL, 0));
	CHECK(!scar_tmp_match("..tmp.a1B2c3", NULL, 0));	/* no base */
	CHECK(!scar_tmp_match(".x.ckpt", NULL, 0));
}

int main(void)
{
	test_utf8_valid();
	test_quote();
	test_fputs_long();
	test_open();
	test_replace();
	test_tmp_names();
	return unit_done("test-file");
}
