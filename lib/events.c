/* events.c - JSON-lines event stream writer and reader (see scar/events.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scar/events.h"

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
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	while ((got = getline(&line, &len, in)) >= 0) {
		json_error_t jerr;
		json_t *rec, *type;

		lineno++;
		if (got == 0 || (got == 1 && line[0] == '\n'))
			continue;	/* tolerate blank lines */
		rec = json_loadb(line, (size_t)got, JSON_DISABLE_EOF_CHECK, &jerr);
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

			if (strcmp(json_string_value(type), "header") != 0 || !fmt ||
			    strcmp(fmt, SCAR_EVENTS_FORMAT) != 0 || !json_is_integer(ver)) {
				json_decref(rec);
				rc = scar_error_set_at(err, SCAR_EFORMAT, name, -1, lineno,
						       "not a scar-events stream (first record is not its header)");
				goto out;
			}
			if (json_integer_value(ver) > SCAR_EVENTS_VERSION) {
				json_decref(rec);
				rc = scar_error_set_at(err, SCAR_EVERSION, name, -1, lineno,
						       "event stream version %lld is newer than %d",
						       (long long)json_integer_value(ver), SCAR_EVENTS_VERSION);
				goto out;
			}
		}
		if (push(ev, &cap, rec)) {
			json_decref(rec);
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
	}
	if (ferror(in)) {
		rc = scar_error_set_errno(err, errno, name, "cannot read event stream");
		goto out;
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
