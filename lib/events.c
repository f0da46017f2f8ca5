/* events.c - JSON-lines event stream writer and reader (see scar/events.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scar/ckpt.h"	/* SCAR_CKPT_MAGIC */
#include "scar/events.h"
#include "scar/file.h"

int scar_event_write(FILE *out, const json_t *rec, struct scar_error *err)
{
	/* JSON_REAL_PRECISION(17) makes every double round-trip exactly. */
	char *s = json_dumps(rec, JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_ENSURE_ASCII);
	int rc = 0;

	if (!s)
		return scar_error_set(err, SCAR_ENOMEM, "cannot encode event record");
	if (fputs(s, out) == EOF || fputc('\n', out) == EOF || fflush(out) == EOF)
		rc = scar_error_set_errno(err, errno, NULL, "cannot write event stream");
	free(s);
	return rc;
}

void scar_events_free(struct scar_events *ev)
{
	if (!ev)
		return;
	for (size_t i = 0; i < ev->n; i++)
		json_decref(ev->records[i]);
	free(ev->records);
	free(ev);
}

static int push(struct scar_events *ev, size_t *cap, json_t *rec)
{
	if (ev->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		json_t **v = realloc(ev->records, ncap * sizeof(*v));

		if (!v)
			return -1;
		ev->records = v;
		*cap = ncap;
	}
	ev->records[ev->n++] = rec;
	return 0;
}

/*
 * Which binary file the first n bytes at p begin, when JSON was expected:
 * "a scar checkpoint", "a .npy array", "a safetensors file" (a
 * little-endian header length below 100 MB, then '{'), or NULL. Said
 * instead of jansson's "unable to decode byte 0x89".
 */
static const char *binary_kind(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	uint64_t len = 0;

	if (n >= 8 && memcmp(p, SCAR_CKPT_MAGIC, 8) == 0)
		return "a scar checkpoint";
	if (n >= 6 && memcmp(p, "\x93NUMPY", 6) == 0)
		return "a .npy array";
	for (int i = 7; n >= 9 && i >= 0; i--)
		len = len << 8 | u[i];
	if (n >= 9 && p[8] == '{' && len >= 2 && len < 100000000)
		return "a safetensors file";
	return NULL;
}

/*
 * Read one line into *buf (NUL-terminated, '\n' kept): its length, 0 at the
 * end of the stream, -1 when it is longer than SCAR_EVENTS_LINE_MAX (not
 * counting the newline), -2 out of memory, -3 a read error (errno kept).
 * Not getline(3): it reads without limit, and glibc's says "end of
 * stream" when it cannot grow its buffer.
 */
static ssize_t read_line(FILE *in, char **buf, size_t *cap)
{
	size_t n = 0;
	int c, e = 0;

	flockfile(in);
	for (;;) {
		c = getc_unlocked(in);
		if (c == EOF) {
			e = ferror(in) ? errno : 0;
			break;
		}
		if (c != '\n' && n == SCAR_EVENTS_LINE_MAX) {
			funlockfile(in);
			return -1;
		}
		if (n + 2 > *cap) {
			size_t ncap = *cap ? *cap * 2 : 4096;
			char *nb;

			if (ncap > SCAR_EVENTS_LINE_MAX + 2)
				ncap = SCAR_EVENTS_LINE_MAX + 2;
			if (!(nb = realloc(*buf, ncap))) {
				funlockfile(in);
				return -2;
			}
			*buf = nb;
			*cap = ncap;
		}
		(*buf)[n++] = (char)c;
		if (c == '\n')
			break;
	}
	funlockfile(in);
	if (c == EOF && ferror(in)) {
		errno = e;
		return -3;
	}
	if (n)
		(*buf)[n] = 0;
	return (ssize_t)n;
}

/*
 * Memory a parse of n bytes may need: jansson 2.14 can crash, not fail,
 * when malloc returns NULL in the middle of a parse, so the reader first
 * makes sure this much is there. "[0,0,...]" costs about 28 bytes per
 * byte (a 24-byte integer and an array slot per two bytes).
 */
#define PARSE_RESERVE(n) (32 * (size_t)(n) + ((size_t)64 << 10))

int scar_events_read(FILE *in, const char *name, struct scar_events **out,
		     struct scar_error *err)
{
	struct scar_events *ev = calloc(1, sizeof(*ev));
	size_t cap = 0, len = 0;
	char *line = NULL;
	ssize_t got;
	int64_t lineno = 0;
	int rc = 0;

	*out = NULL;
	if (!ev)
		return scar_error_set_at(err, SCAR_ENOMEM, name, -1, -1, "out of memory");
	for (;;) {
		json_error_t jerr;
		json_t *rec, *type;
		void *probe;

		lineno++;
		got = read_line(in, &line, &len);
		if (got == -1) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, name, -1, lineno,
					       "line %lld longer than %zu bytes",
					       (long long)lineno, SCAR_EVENTS_LINE_MAX);
			goto out;
		}
		if (got == -2) {
			rc = scar_error_set_at(err, SCAR_ENOMEM, name, -1, lineno,
					       "line %lld: out of memory", (long long)lineno);
			goto out;
		}
		if (got == -3) {
			rc = scar_error_set_errno(err, errno, name, "cannot read the event stream");
			if (err)
				err->line = lineno;
			goto out;
		}
		if (got == 0)
			break;
		if (got == 1 && line[0] == '\n')
			continue;	/* tolerate blank lines */
		if (!(probe = malloc(PARSE_RESERVE(got)))) {
			rc = scar_error_set_at(err, SCAR_ENOMEM, name, -1, lineno,
					       "line %lld: out of memory", (long long)lineno);
			goto out;
		}
		free(probe);
		/* no JSON_DISABLE_EOF_CHECK: a second record or text after one is refused */
		rec = json_loadb(line, (size_t)got, 0, &jerr);
		if (!rec && json_error_code(&jerr) == json_error_out_of_memory) {
			rc = scar_error_set_at(err, SCAR_ENOMEM, name, -1, lineno,
					       "line %lld: out of memory", (long long)lineno);
			goto out;
		}
		if (!rec && json_error_code(&jerr) == json_error_end_of_input_expected) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, name, -1, lineno,
					       "text after the record at column %d: one JSON object per line",
					       jerr.column);
			goto out;
		}
		if (!rec && lineno == 1 && binary_kind(line, (size_t)got)) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, name, -1, -1,
					       "'%s' is %s, not an event stream (JSON lines, "
					       "as scar-train writes on stdout)", name,
					       binary_kind(line, (size_t)got));
			goto out;
		}
		if (!rec) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, name, -1, lineno,
					       "not a JSON record: %s", jerr.text);
			goto out;
		}
		type = json_object_get(rec, "type");
		if (!json_is_object(rec) || !json_is_string(type)) {
			json_decref(rec);
			rc = scar_error_set_at(err, SCAR_EFORMAT, name, -1, lineno,
					       "record has no \"type\" string");
			goto out;
		}
		if (ev->n == 0) {
			const char *fmt = json_string_value(json_object_get(rec, "format"));
			json_t *ver = json_object_get(rec, "version");
			json_int_t v = json_integer_value(ver);

			/* v is read before rec (which owns ver) can be freed below */
			if (strcmp(json_string_value(type), "header") != 0 || !fmt ||
			    strcmp(fmt, SCAR_EVENTS_FORMAT) != 0 || !json_is_integer(ver)) {
				json_decref(rec);
				rc = scar_error_set_at(err, SCAR_EFORMAT, name, -1, lineno,
						       "not a scar-events stream (first record is not its header)");
				goto out;
			}
			if (v < 1) {
				json_decref(rec);
				rc = scar_error_set_at(err, SCAR_EFORMAT, name, -1, lineno,
						       "event stream version %lld is not a version (1 or more)",
						       (long long)v);
				goto out;
			}
			if (v > SCAR_EVENTS_VERSION) {
				json_decref(rec);
				rc = scar_error_set_at(err, SCAR_EVERSION, name, -1, lineno,
						       "event stream version %lld is newer than %d",
						       (long long)v, SCAR_EVENTS_VERSION);
				goto out;
			}
		}
		if (ev->n > 0 && strcmp(json_string_value(type), "header") == 0) {
			json_decref(rec);
			rc = scar_error_set_at(err, SCAR_EFORMAT, name, -1, lineno,
					       "a second header record: one stream per file (streams joined?)");
			goto out;
		}
		if (push(ev, &cap, rec)) {
			json_decref(rec);
			rc = scar_error_set_at(err, SCAR_ENOMEM, name, -1, lineno,
					       "line %lld: out of memory", (long long)lineno);
			goto out;
		}
	}
	if (ev->n == 0)
		rc = scar_error_set_at(err, SCAR_EFORMAT, name, -1, -1, "empty event stream");
out:
	free(line);
	if (rc) {
		scar_events_free(ev);
		return rc;
	}
	*out = ev;
	return 0;
}

const json_t *scar_events_find(const struct scar_events *ev, const char *type, size_t *pos)
{
	for (size_t i = pos ? *pos : 0; i < ev->n; i++) {
		const char *t = json_string_value(json_object_get(ev->records[i], "type"));

		if (t && strcmp(t, type) == 0) {
			if (pos)
				*pos = i;
			return ev->records[i];
		}
	}
	return NULL;
}

json_t *scar_json_text(const char *s)
{
	json_t *j;
	char *valid;

	if (!s)
		return json_null();
	if ((j = json_string(s)))
		return j;
	if (!(valid = scar_utf8_valid(s)))
		return NULL;
	j = json_string(valid);
	free(valid);
	return j;
}

int scar_json_read_doc(FILE *in, const char *name, size_t max, json_t **out,
		       struct scar_error *err)
{
	size_t n = 0, cap = 0;
	char *buf = NULL;
	json_error_t jerr;
	void *probe;
	int64_t nul = -1;
	int c;

	*out = NULL;
	/* Read at most max bytes: jansson on an endless stream never returns. */
	flockfile(in);
	while ((c = getc_unlocked(in)) != EOF) {
		if (n == max) {
			funlockfile(in);
			free(buf);
			return scar_error_set_at(err, SCAR_EFORMAT, name, -1, -1,
						 "longer than %zu bytes: not a JSON document this tool reads",
						 max);
		}
		/* after a NUL, only enough for binary_kind to name the file */
		if (c == 0 && nul < 0)
			nul = (int64_t)n;
		if (nul >= 0 && n >= 16)
			break;
		if (n + 1 > cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *nb;

			if (ncap > max + 1)
				ncap = max + 1;
			if (!(nb = realloc(buf, ncap))) {
				funlockfile(in);
				free(buf);
				return scar_error_set_at(err, SCAR_ENOMEM, name, -1, -1, "out of memory");
			}
			buf = nb;
			cap = ncap;
		}
		buf[n++] = (char)c;
	}
	funlockfile(in);
	if (nul >= 0) {
		const char *kind = binary_kind(buf, n);
		int rc = kind ? scar_error_set_at(err, SCAR_EFORMAT, name, -1, -1,
						  "'%s' is %s, not JSON text", name, kind)
			      : scar_error_set_at(err, SCAR_EFORMAT, name, nul, -1,
						  "a NUL byte: not JSON text");

		free(buf);
		return rc;
	}
	if (ferror(in)) {
		int e = errno;

		free(buf);
		return scar_error_set_errno(err, e, name, "cannot read '%s'", name);
	}
	if (n == 0)
		return scar_error_set_at(err, SCAR_EFORMAT, name, -1, -1, "empty: no JSON value");
	if (!(probe = malloc(PARSE_RESERVE(n)))) {
		free(buf);
		return scar_error_set_at(err, SCAR_ENOMEM, name, -1, -1, "out of memory");
	}
	free(probe);
	*out = json_loadb(buf, n, 0, &jerr);
	free(buf);
	if (*out)
		return 0;
	if (json_error_code(&jerr) == json_error_out_of_memory)
		return scar_error_set_at(err, SCAR_ENOMEM, name, -1, -1, "out of memory");
	if (json_error_code(&jerr) == json_error_end_of_input_expected)
		return scar_error_set_at(err, SCAR_EFORMAT, name, -1, jerr.line,
					 "text after the JSON value at column %d: one value only",
					 jerr.column);
	return scar_error_set_at(err, SCAR_EFORMAT, name, -1, jerr.line, "not JSON: %s", jerr.text);
}

int scar_events_unperturbed(const json_t *const *records, size_t n, struct scar_error *err)
{
	for (size_t i = 0; i < n; i++) {
		const char *type = json_string_value(json_object_get(records[i], "type"));

		if (type && (!strcmp(type, "failure") || !strcmp(type, "recovery")))
			return scar_error_set_at(err, SCAR_EFORMAT, NULL, -1, (int64_t)i + 1,
						 "reference stream has a %s record: a perturbed run is no reference",
						 type);
	}
	return 0;
}

/*
 * JSON equality with numbers compared by value: a configuration passed
 * through jq (which writes 0.0 as 0) is still the same configuration.
 */
static int same_value(const json_t *a, const json_t *b)
{
	const char *key;
	const json_t *v;
	size_t i;

	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (json_is_object(a) && json_is_object(b)) {
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)(uintptr_t)a, key, v)
			if (!same_value(v, json_object_get(b, key)))
				return 0;
		return 1;
	}
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		json_array_foreach(a, i, v)
			if (!same_value(v, json_array_get(b, i)))
				return 0;
		return 1;
	}
	return json_equal(a, b);
}

int scar_events_same_run(const json_t *ref_header, const char *model, const json_t *shards,
			 const json_t *config, struct scar_error *err)
{
	const char *rm = json_string_value(json_object_get(ref_header, "model"));
	const json_t *rs = json_object_get(ref_header, "shards");
	const json_t *rc = json_object_get(ref_header, "config");

	/* Another run's objectives would measure nothing: refuse them. */
	if ((rm || model) && (!rm || !model || strcmp(rm, model)))
		return scar_error_set(err, SCAR_EMISMATCH,
				      "the reference is a run of model '%s', not '%s'",
				      rm ? rm : "?", model ? model : "?");
	if ((rs || shards) && (!json_is_integer(rs) || !json_is_integer(shards) ||
			       json_integer_value(rs) != json_integer_value(shards)))
		return scar_error_set(err, SCAR_EMISMATCH,
				      "the reference has other shards than this run's %lld",
				      (long long)json_integer_value(shards));
	if ((rc || config) && !same_value(rc, config))
		return scar_error_set(err, SCAR_EMISMATCH,
				      "the reference's configuration (seed, data, keys) is not this run's");
	return 0;
}
