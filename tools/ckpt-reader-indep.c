/*
 * ckpt-reader-indep.c - an independent reader of scar checkpoints, written
 * from scar-ckpt(5) alone (no libscar checkpoint code), as the page's proof.
 * It reads a checkpoint front to back (a file or stdin), checks everything
 * the page says a reader checks, and prints every present row as text:
 *
 *	# model M iteration N shards S kind K
 *	NAME ROW V0 V1 ...		(one line per present row, in table order)
 *
 * Floats are printed with %.9g (f32, f16, bf16) or %.17g (f64), so they
 * read back exactly. Exit 0 ok, 1 the checkpoint is damaged, 2 it is unsupported
 * (scar-ckpt(5): unknown flags, dtype, role or shard rule), or a usage or
 * I/O error.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <lz4.h>
#include <lz4frame.h>

static FILE *in;
static uint64_t pos;
/* The section being read, stored and decoded: freed when bad() exits in
 * the middle of one, so that a leak checker does not call them leaks. */
static unsigned char *stored_buf, *decoded_buf;

static _Noreturn void bad(const char *what)
{
	fprintf(stderr, "ckpt-reader-indep: offset %" PRIu64 ": %s\n", pos, what);
	free(stored_buf);
	free(decoded_buf);
	exit(1);
}

/* Not damage: something a later 1.x may define. */
static _Noreturn void unsupported(const char *what)
{
	fprintf(stderr, "ckpt-reader-indep: offset %" PRIu64 ": unsupported: %s\n", pos, what);
	free(stored_buf);
	free(decoded_buf);
	exit(2);
}

/* An integer (no fraction or exponent) of at least 0, or damage. */
static uint64_t uint_of(json_t *x, const char *what)
{
	if (!json_is_integer(x) || json_integer_value(x) < 0)
		bad(what);
	return (uint64_t)json_integer_value(x);
}

static uint32_t crc32c(const unsigned char *p, size_t n, uint32_t c)
{
	c = ~c;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & -(c & 1));
	}
	return ~c;
}

static void rd(void *buf, size_t n)
{
	if (n && fread(buf, 1, n, in) != n) {
		if (ferror(in)) {	/* unreadable is not damaged: exit 2, not 1 */
			perror("ckpt-reader-indep: cannot read");
			exit(2);
		}
		bad("truncated");
	}
	pos += n;
}

/* LZ4F's error names are for programmers; a reader says what is wrong. */
static const char *lz4_words(size_t r)
{
	const char *n = LZ4F_getErrorName(r);

	if (strstr(n, "blockChecksum"))
		return "LZ4 block checksum mismatch";
	if (strstr(n, "contentChecksum"))
		return "LZ4 content checksum mismatch";
	if (strstr(n, "headerChecksum"))
		return "LZ4 frame header checksum mismatch";
	if (strstr(n, "frameSize"))
		return "LZ4 frame content size mismatch";
	if (strstr(n, "allocation"))
		return "out of memory";
	return "corrupt LZ4 frame";
}

/* A string member, or "" when missing. */
static const char *str(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : "";
}

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

struct tensor {
	const char *name, *dtype;
	size_t esz, rowb;
	uint64_t rows, S, rowelems;
	unsigned char *data, *present;
};

static size_t dtype_size(const char *d)
{
	static const char *n[] = { "f32", "f64", "i32", "i64", "u32", "u64", "u8", "f16", "bf16" };
	static const size_t s[] = { 4, 8, 4, 8, 4, 8, 1, 2, 2 };

	for (int i = 0; i < 9; i++)
		if (strcmp(d, n[i]) == 0)
			return s[i];
	unsupported("unknown dtype");
}

static void print_elem(const struct tensor *t, const unsigned char *p)
{
	uint64_t v = le(p, (int)t->esz);
	float f;
	double d;

	if (strcmp(t->dtype, "f32") == 0) {
		uint32_t u = (uint32_t)v;

		memcpy(&f, &u, 4);
		printf(" %.9g", f);
	} else if (strcmp(t->dtype, "f64") == 0) {
		memcpy(&d, &v, 8);
		printf(" %.17g", d);
	} else if (strcmp(t->dtype, "f16") == 0) {
		/* binary16: sign bit 15, exponent bits 14-10 biased by 15, fraction 9-0 */
		unsigned e = (unsigned)(v >> 10) & 31, m = (unsigned)v & 1023;

		d = e == 31 ? (m ? NAN : INFINITY) : e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24);
		printf(" %.9g", v >> 15 ? -d : d);
	} else if (strcmp(t->dtype, "bf16") == 0) {
		/* the top 16 bits of a binary32 */
		uint32_t u = (uint32_t)v << 16;

		memcpy(&f, &u, 4);
		printf(" %.9g", f);
	} else if (t->dtype[0] == 'i') {
		printf(" %" PRId64, t->esz == 4 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v);
	} else {
		printf(" %" PRIu64, v);
	}
}

/*
 * Format 1.3, flag bit 3: the decoded content of each LZ4 data block of n
 * bytes holds byte j of element i (m = n / e whole elements of e bytes) at
 * j * m + i, and its last n - m * e bytes as they are. frame (flen bytes)
 * has been checked and decoded into dec by LZ4F; walk its blocks for their
 * lengths and put each block's bytes back in place.
 */
static void unshuffle_blocks(const unsigned char *frame, uint64_t flen, unsigned char *dec,
			     size_t e, uint64_t bs)
{
	unsigned char *tmp = malloc(bs), *blk = malloc(bs);
	uint64_t p = 15, at = 0;

	if (!tmp || !blk)
		bad("out of memory");
	while (p + 4 <= flen && le(frame + p, 4)) {
		uint32_t w = (uint32_t)le(frame + p, 4), size = w & 0x7FFFFFFFu;
		uint64_t n;

		if (w >> 31) {
			n = size;
		} else {
			int k = LZ4_decompress_safe((const char *)frame + p + 4, (char *)blk, (int)size,
						    (int)bs);

			if (k < 0)
				bad("corrupt LZ4 block");
			n = (uint64_t)k;
		}
		memcpy(tmp, dec + at, n);
		for (uint64_t i = 0, m = n / e; i < m; i++)
			for (size_t j = 0; j < e; j++)
				dec[at + i * e + j] = tmp[j * m + i];
		at += n;
		p += 4 + size + 4;	/* size, data, block checksum */
	}
	free(tmp);
	free(blk);
}

/* Section flags this reader cannot read (scar-ckpt(5)), for a dtype of esz bytes. */
static int flags_unsupported(uint64_t flags, size_t esz, uint64_t minor)
{
	return flags >> 4 || (flags & 14 && !(flags & 1)) || (flags & 8 && (esz < 2 || minor < 3));
}

/* Decode one payload of stored bytes into out (raw bytes), checking it. */
static void payload(uint32_t flags, uint64_t raw, uint64_t stored, unsigned char *out,
		    size_t esz, uint64_t minor)
{
	unsigned char *buf = stored_buf = malloc(stored ? stored : 1);

	if (!buf)
		bad("out of memory");
	rd(buf, stored);
	if (flags_unsupported(flags, esz, minor))
		unsupported("section flags");
	if (!(flags & 1)) {
		if (flags || stored != raw + 4 || crc32c(buf, raw, 0) != le(buf + raw, 4))
			bad("raw section: bad flags, length or CRC");
		memcpy(out, buf, raw);
	} else {
		unsigned b = (flags >> 1) & 3;
		LZ4F_dctx *dc;
		size_t dn = raw, sn = stored, r;

		uint64_t bs = (uint64_t)65536 << (2 * b);

		if (stored > 4119 + raw + 8 * ((raw + bs - 1) / bs))
			bad("LZ4 section longer than the bound");
		if (raw == 0 || stored < 23 || le(buf, 4) != 0x184D2204u ||
		    buf[4] != 0x7C || buf[5] != (4 + b) << 4 || le(buf + 6, 8) != raw)
			bad("LZ4 section: bad flags or frame header");
		if (LZ4F_isError(LZ4F_createDecompressionContext(&dc, LZ4F_VERSION)))
			bad("out of memory");
		r = LZ4F_decompress(dc, out, &dn, buf, &sn, NULL);
		if (LZ4F_isError(r) || r != 0 || dn != raw || sn != stored)
			bad(LZ4F_isError(r) ? lz4_words(r) : "LZ4 frame size mismatch");
		LZ4F_freeDecompressionContext(dc);
		if (flags & 8)
			unshuffle_blocks(buf, stored, out, esz, bs);
	}
	free(buf);
	stored_buf = NULL;
}

int main(int argc, char **argv)
{
	unsigned char h[48], *meta, *idx, meta_minor[2];
	json_t *m, *tv;
	json_error_t je;
	struct tensor *T;
	size_t nt, nsec = 0, cap = 16;
	uint64_t (*sec)[6] = malloc(cap * sizeof(*sec)), S;
	uint32_t mlen;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-' && argv[1][1])) {
		fprintf(stderr, "usage: ckpt-reader-indep [file | -]\n");
		return 2;
	}
	in = argc == 2 && strcmp(argv[1], "-") ? fopen(argv[1], "rb") : stdin;
	if (!in || !sec) {
		perror("ckpt-reader-indep");
		return 2;
	}
	rd(h, 16);
	if (memcmp(h, "\x89SCARCK\n", 8))
		bad("bad magic");
	if (crc32c(h, 12, 0) != le(h + 12, 4))
		bad("header CRC");
	if (le(h + 8, 2) != 1)
		bad("unsupported major version");
	memcpy(meta_minor, h + 10, 2);
	rd(h, 8);
	mlen = (uint32_t)le(h, 4);
	if (mlen < 1 || mlen > (64u << 20))
		bad("metadata length");
	meta = malloc(mlen);
	if (!meta)
		bad("out of memory");
	rd(meta, mlen);
	if (crc32c(meta, mlen, 0) != le(h + 4, 4))
		bad("metadata CRC");
	m = json_loadb((const char *)meta, mlen, JSON_REJECT_DUPLICATES, &je);
	if (!m || strcmp(str(m, "format"), "scar-ckpt"))
		bad("metadata");
	/* Every key is required, in the page's order of checks. */
	tv = json_object_get(m, "tensors");
	if (uint_of(json_object_get(m, "version"), "metadata version") != 1 ||
	    !json_is_string(json_object_get(m, "model")) ||
	    strlen(str(m, "model")) > 127)
		bad("metadata");
	uint_of(json_object_get(m, "iteration"), "metadata iteration");
	S = uint_of(json_object_get(m, "shards"), "metadata shards");
	if (S < 1 || S > 65536 || !json_is_string(json_object_get(m, "shard_rule")))
		bad("metadata");
	if (strcmp(str(m, "shard_rule"), "row mod shards"))
		unsupported("shard rule");
	if ((strcmp(str(m, "kind"), "full") && strcmp(str(m, "kind"), "partial")) ||
	    !json_is_object(json_object_get(m, "config")) ||
	    !json_is_object(json_object_get(m, "extra")) || !json_is_array(tv))
		bad("metadata");
	nt = json_array_size(tv);
	T = calloc(nt + 1, sizeof(*T));
	for (size_t i = 0; i < nt; i++) {
		json_t *o = json_array_get(tv, i), *shape = json_object_get(o, "shape");
		json_t *pr = json_object_get(o, "present");
		struct tensor *t = &T[i];

		t->name = json_string_value(json_object_get(o, "name"));
		t->dtype = json_string_value(json_object_get(o, "dtype"));
		if (!t->name || !t->dtype || !json_is_string(json_object_get(o, "role")) ||
		    !json_is_array(shape) || !pr || json_array_size(shape) > 8)
			bad("tensor table");
		t->esz = dtype_size(t->dtype);
		if (t->esz == 2 && le(meta_minor, 2) < 2)
			unsupported("f16 or bf16 in a file below version 1.2");
		if (strcmp(str(o, "role"), "param") && strcmp(str(o, "role"), "state"))
			unsupported("unknown role");
		for (size_t d = 0; d < json_array_size(shape); d++)
			uint_of(json_array_get(shape, d), "tensor shape");
		t->rows = json_array_size(shape) ? (uint64_t)json_integer_value(json_array_get(shape, 0)) : 1;
		t->rowelems = 1;
		for (size_t d = 1; d < json_array_size(shape); d++)
			t->rowelems *= (uint64_t)json_integer_value(json_array_get(shape, d));
		t->rowb = t->rowelems * t->esz;
		t->S = strcmp(str(o, "role"), "param") ? 1 : S;
		if (uint_of(json_object_get(o, "rows"), "tensor rows") != t->rows ||
		    (t->rows && t->rowb > (1ull << 40) / t->rows))
			bad("tensor rows");
		t->data = calloc(t->rows * t->rowb + 1, 1);
		t->present = calloc(t->rows + 1, 1);
		if (!t->data || !t->present)
			bad("out of memory");
		if (json_is_string(pr) && strcmp(json_string_value(pr), "all") == 0) {
			memset(t->present, 1, t->rows);
		} else if (json_is_object(pr)) {
			/* format 1.1: base64 bitmap, bit r%8 of byte r/8 */
			static const char al[] =
				"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
			const char *b = json_string_value(json_object_get(pr, "bitmap"));
			uint64_t nb = (t->rows + 7) / 8, bit = 0;

			if (le(meta_minor, 2) < 1)
				bad("present bitmap in a version 1.0 file");
			if (!b || strlen(b) != 4 * ((nb + 2) / 3) ||
			    strspn(b + strcspn(b, "="), "=") != (3 - nb % 3) % 3)
				bad("present bitmap");
			for (size_t q = 0; b[q]; q++) {
				const char *c = b[q] == '=' ? NULL : strchr(al, b[q]);

				if (!c && (b[q] != '=' || strspn(b + q, "=") != strlen(b + q)))
					bad("present bitmap");
				for (int k = 5; c && k >= 0; k--, bit++) {
					/* base64 is big-endian in its 6-bit groups */
					int on = (int)((c - al) >> k & 1);
					uint64_t byte = bit / 8, row = byte * 8 + (7 - bit % 8);

					if (on && (byte >= nb || row >= t->rows))
						bad("present bitmap");
					if (on)
						t->present[row] = 1;
				}
			}
		} else {
			for (size_t k = 0; k < json_array_size(pr); k++) {
				uint64_t a = (uint64_t)json_integer_value(json_array_get(json_array_get(pr, k), 0));
				uint64_t c = (uint64_t)json_integer_value(json_array_get(json_array_get(pr, k), 1));

				if (c < 1 || a > t->rows || c > t->rows - a)
					bad("present range");
				memset(t->present + a, 1, c);
			}
		}
	}
	/* The sections the table implies, in order. */
	for (size_t i = 0; i < nt; i++)
		for (uint64_t s = 0; s < T[i].S; s++) {
			struct tensor *t = &T[i];
			uint64_t n = 0, off = pos;
			unsigned char *buf, *p;

			for (uint64_t r = s; r < t->rows; r += t->S)
				n += t->present[r];
			if (!n)
				continue;
			rd(h, 48);
			if (memcmp(h, "SCSE", 4) || crc32c(h, 44, 0) != le(h + 44, 4) ||
			    le(h + 4, 4) != i || le(h + 8, 4) != s || le(h + 16, 8) != n)
				bad("section header");
			/* flags and reserved field before the lengths (the order of checks) */
			if (flags_unsupported(le(h + 12, 4), t->esz, le(meta_minor, 2)))
				unsupported("section flags");
			if (le(h + 40, 4))
				unsupported("section reserved field");
			if (le(h + 24, 8) != n * t->rowb)
				bad("section header");
			p = buf = decoded_buf = malloc(n * t->rowb + 1);
			payload((uint32_t)le(h + 12, 4), n * t->rowb, le(h + 32, 8), buf, t->esz,
				le(meta_minor, 2));
			for (uint64_t r = s; r < t->rows; r += t->S)
				if (t->present[r]) {
					memcpy(t->data + r * t->rowb, p, t->rowb);
					p += t->rowb;
				}
			free(buf);
			decoded_buf = NULL;
			if (nsec == cap && !(sec = realloc(sec, (cap *= 2) * sizeof(*sec))))
				bad("out of memory");
			sec[nsec][0] = i;
			sec[nsec][1] = s;
			sec[nsec][2] = off;
			sec[nsec][3] = n;
			sec[nsec][4] = n * t->rowb;
			sec[nsec][5] = le(h + 32, 8);
			nsec++;
		}
	{
		uint64_t ioff = pos;
		size_t ilen = 8 + 40 * nsec + 4;

		idx = malloc(ilen);
		rd(idx, 8);
		if (memcmp(idx, "SCIX", 4) || le(idx + 4, 4) != nsec)
			bad("index header");
		rd(idx + 8, ilen - 8);
		if (crc32c(idx, ilen - 4, 0) != le(idx + ilen - 4, 4))
			bad("index CRC");
		for (size_t k = 0; k < nsec; k++)
			for (int f = 0; f < 6; f++)
				if (le(idx + 8 + 40 * k + (f < 2 ? 4 * f : 8 * f - 8), f < 2 ? 4 : 8) != sec[k][f])
					bad("index entry");
		rd(h, 32);
		if (memcmp(h + 24, "SCAREND\n", 8) || crc32c(h, 20, 0) != le(h + 20, 4) ||
		    le(h, 8) != ioff || le(h + 8, 8) != pos)
			bad("trailer");
		if (le(h + 16, 4))
			unsupported("trailer flags");
		if (fgetc(in) != EOF)
			bad("data after the trailer");
	}
	printf("# model %s iteration %" PRId64 " shards %" PRIu64 " kind %s\n",
	       json_string_value(json_object_get(m, "model")),
	       (int64_t)json_integer_value(json_object_get(m, "iteration")), S,
	       json_string_value(json_object_get(m, "kind")));
	for (size_t i = 0; i < nt; i++)
		for (uint64_t r = 0; r < T[i].rows; r++) {
			if (!T[i].present[r])
				continue;
			printf("%s %" PRIu64, T[i].name, r);
			for (uint64_t e = 0; e < T[i].rowelems; e++)
				print_elem(&T[i], T[i].data + r * T[i].rowb + e * T[i].esz);
			putchar('\n');
		}
	for (size_t i = 0; i < nt; i++) {
		free(T[i].data);
		free(T[i].present);
	}
	free(T);
	free(sec);
	free(idx);
	free(meta);
	json_decref(m);
	if (in != stdin)
		fclose(in);
	return fflush(stdout) || ferror(stdout) ? 2 : 0;
}
