/*
 * arrayfile_stream.c - snapshots concatenated on one descriptor, as a
 * training loop writes them into a pipe (scar-ckpt save --stream). Each is
 * a whole safetensors or .npy file, and both delimit themselves: a
 * safetensors file ends where its last tensor's data ends (its header says
 * where), a .npy file after shape times dtype bytes. So each snapshot is
 * read with exact reads - never a byte of the next one - straight into the
 * tensors it becomes; the headers are parsed by the formats' own parsers
 * (scar_safetensors_parse, scar_npy_header_read).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "scar/arrayfile.h"
#include "scar/ckpt.h"
#include "scar/file.h"
#include "scar/tensor.h"

/* The safetensors reader's own limit on a header (lib/arrayfile_npy.c). */
#define STREAM_ST_HEADER_MAX (100u << 20)

struct scar_array_stream {
	int fd;
	char *name;
	uint64_t max_bytes;	/* of one snapshot's tensors; 0 for no limit */
	uint64_t off;		/* bytes consumed */
	uint64_t count;		/* snapshots begun */
	uint64_t start;		/* the offset the current one began at */
};

int scar_array_stream_open(struct scar_array_stream **out, int fd, const char *name,
			   uint64_t max_bytes, struct scar_error *err)
{
	struct scar_array_stream *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s || !(s->name = strdup(name ? name : "-"))) {
		free(s);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	s->fd = fd;
	s->max_bytes = max_bytes;
	*out = s;
	return 0;
}

void scar_array_stream_close(struct scar_array_stream *s)
{
	if (!s)
		return;
	free(s->name);
	free(s);
}

uint64_t scar_array_stream_count(const struct scar_array_stream *s)
{
	return s->count;
}

uint64_t scar_array_stream_start(const struct scar_array_stream *s)
{
	return s->start;
}

/* An error about the current snapshot, at offset at of the stream. */
#define SNAP_ERR(s, err, code, at, fmt, ...)                                              \
	scar_error_set_at(err, code, (s)->name, (int64_t)(at), -1,                       \
			  "snapshot %llu (from byte %llu): " fmt, (unsigned long long)(s)->count, \
			  (unsigned long long)(s)->start, __VA_ARGS__)

/* n bytes into buf: 0, or SCAR_ETRUNC saying what ended early, or SCAR_EIO. */
static int get(struct scar_array_stream *s, void *buf, size_t n, const char *what,
	       struct scar_error *err)
{
	ssize_t k = scar_read_upto(s->fd, buf, n);

	if (k < 0)
		return scar_error_set_errno(err, (int)-k, s->name, "cannot read '%s'", s->name);
	s->off += (uint64_t)k;
	if ((size_t)k < n)
		return SNAP_ERR(s, err, SCAR_ETRUNC, s->off,
				"the stream ends inside its %s (%llu of %llu bytes)", what,
				(unsigned long long)k, (unsigned long long)n);
	return 0;
}

/* The declared bytes of the tensors against the limit. */
static int check_size(struct scar_array_stream *s, const struct scar_array_info *t, size_t n,
		      struct scar_error *err)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		if (t[i].nbytes > UINT64_MAX - total)
			total = UINT64_MAX;
		else
			total += t[i].nbytes;
	}
	if (s->max_bytes && total > s->max_bytes)
		return SNAP_ERR(s, err, SCAR_ENOMEM, s->start,
				"its tensors need %llu bytes of memory, more than the %llu bytes available",
				(unsigned long long)total, (unsigned long long)s->max_bytes);
	return 0;
}

/* Tensor t read from the stream (its stored bytes, then widened in place) into st. */
static int read_tensor(struct scar_array_stream *s, const struct scar_array_info *t,
		       struct scar_state *st, struct scar_error *err)
{
	struct scar_tensor *x;
	uint64_t elems = t->nbytes / scar_dtype_size(t->dtype);
	size_t stored = (size_t)(elems * t->stored_size);
	char what[SCAR_NAME_MAX + 32];
	int rc;

	/* The stream becomes checkpoints, which have no 8-bit float (scar-ckpt import refuses them too). */
	if (t->stored && !strncmp(t->stored, "f8", 2))
		return scar_error_set(err, SCAR_EUNSUPPORTED,
				      "tensor '%s' is %s: a checkpoint has no 8-bit float type", t->name,
				      !strcmp(t->stored, "f8_e4m3") ? "F8_E4M3" : "F8_E5M2");
	if ((rc = scar_tensor_new(&x, t->name, t->dtype, t->role, t->ndim, t->shape, err)))
		return rc;
	snprintf(what, sizeof(what), "tensor '%s'", t->name);
	/* scar_array_decode widens from the end of the buffer */
	if ((rc = get(s, (unsigned char *)x->data + (size_t)t->nbytes - stored, stored, what, err))) {
		scar_tensor_free(x);
		return rc;
	}
	scar_array_decode(t, x->data, (size_t)elems);
	if ((rc = scar_state_add(st, x, err)))
		scar_tensor_free(x);
	return rc;
}

/* The end of the data area a safetensors header declares: its largest data_offsets end. */
static uint64_t st_data_len(const char *h, size_t n)
{
	json_t *root = json_loadb(h, n, 0, NULL), *v;
	const char *key;
	uint64_t end = 0;

	json_object_foreach(root, key, v) {
		const json_t *e = json_array_get(json_object_get(v, "data_offsets"), 1);

		if (strcmp(key, "__metadata__") && json_is_integer(e) && json_integer_value(e) > 0 &&
		    (uint64_t)json_integer_value(e) > end)
			end = (uint64_t)json_integer_value(e);
	}
	json_decref(root);
	return end;
}

static int next_safetensors(struct scar_array_stream *s, const unsigned char *pre,
			    struct scar_state *st, struct scar_error *err)
{
	uint64_t hlen = 0, dlen;
	struct scar_array_info *t = NULL;
	json_t *meta = NULL;
	size_t n = 0;
	char *h;
	int rc;

	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | pre[i];
	if (hlen < 2 || hlen > STREAM_ST_HEADER_MAX)
		return SNAP_ERR(s, err, SCAR_EFORMAT, s->start,
				"safetensors header length %llu is not in 2..%u", (unsigned long long)hlen,
				STREAM_ST_HEADER_MAX);
	if (!(h = malloc((size_t)hlen)))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	h[0] = (char)pre[8];	/* the sniff read the header's first byte */
	if ((rc = get(s, h + 1, (size_t)hlen - 1, "safetensors header", err)))
		goto out;
	dlen = st_data_len(h, (size_t)hlen);
	/* The format's parser checks it all, against a file that ends where the data does. */
	if ((rc = scar_safetensors_parse(h, (size_t)hlen, 8 + hlen, 8 + hlen + dlen, &t, &n, &meta,
					 err))) {
		char why[SCAR_ERROR_MSG_MAX];

		snprintf(why, sizeof(why), "%s", err ? err->msg : "");
		rc = SNAP_ERR(s, err, rc, s->start, "not a valid safetensors file: %s", why);
		goto out;
	}
	if ((rc = check_size(s, t, n, err)))
		goto out;
	/* sorted by offset and without holes: the tensors come in file order */
	for (size_t i = 0; !rc && i < n; i++)
		rc = read_tensor(s, &t[i], st, err);
	if (!rc && meta && json_object_set(st->extra, "safetensors", meta))
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
out:
	json_decref(meta);
	free(t);
	free(h);
	return rc;
}

static int next_npy(struct scar_array_stream *s, const unsigned char *pre, size_t n,
		    struct scar_state *st, struct scar_error *err)
{
	struct scar_array_info t;
	int rc;

	/* the header's bytes are counted from its own length once it is read */
	rc = scar_npy_header_read(s->fd, s->name, pre, n, UINT64_MAX, &t, err);
	if (rc == SCAR_EIO)
		return rc;
	if (rc == SCAR_ETRUNC)
		return SNAP_ERR(s, err, rc, s->start, "%s", "the stream ends inside its .npy header");
	if (rc) {
		char why[SCAR_ERROR_MSG_MAX];

		snprintf(why, sizeof(why), "%s", err ? err->msg : "");
		return SNAP_ERR(s, err, rc, s->start, "not a valid .npy file: %s", why);
	}
	s->off = s->start + t.offset;
	snprintf(t.name, sizeof(t.name), "array");	/* as "-" is named (scar_arrayfile_open) */
	if ((rc = check_size(s, &t, 1, err)))
		return rc;
	return read_tensor(s, &t, st, err);
}

int scar_array_stream_next(struct scar_array_stream *s, struct scar_state **out,
			   struct scar_error *err)
{
	unsigned char pre[9];
	struct scar_state *st = NULL;
	ssize_t k;
	int rc;

	*out = NULL;
	s->start = s->off;
	k = scar_read_upto(s->fd, pre, 1);
	if (k < 0)
		return scar_error_set_errno(err, (int)-k, s->name, "cannot read '%s'", s->name);
	if (k == 0)
		return 0;	/* the end, between two snapshots */
	s->count++;
	s->off++;
	if ((rc = get(s, pre + 1, 8, "first 9 bytes", err)))
		return rc;
	if ((rc = scar_state_new(&st, "", err)))
		return rc;
	switch (scar_array_sniff(pre, 9)) {
	case SCAR_ARRAY_SAFETENSORS:
		rc = next_safetensors(s, pre, st, err);
		break;
	case SCAR_ARRAY_NPY:
		rc = next_npy(s, pre, 9, st, err);
		break;
	default:
		if (pre[8] == '{') {
			/* a safetensors header of a length the sniff does not believe: say which */
			rc = next_safetensors(s, pre, st, err);
			break;
		}
		if (memcmp(pre, SCAR_CKPT_MAGIC, 8) == 0)
			rc = SNAP_ERR(s, err, SCAR_EUNSUPPORTED, s->start, "%s",
				      "a scar checkpoint, which a stream cannot carry (it ends at its trailer, found only by reading to the end): give it in a call of its own");
		else
			rc = SNAP_ERR(s, err, SCAR_EFORMAT, s->start,
				      "not a safetensors or .npy snapshot (bytes %02x %02x %02x %02x)",
				      pre[0], pre[1], pre[2], pre[3]);
	}
	if (rc) {
		scar_state_free(st);
		return rc;
	}
	*out = st;
	return 1;
}
