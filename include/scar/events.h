/*
 * scar/events.h - the JSON-lines event stream (specified in scar-events(7)).
 *
 * One compact JSON object per line, '\n'-terminated, UTF-8. Every record has
 * a "type". The first record is {"type":"header","format":"scar-events",
 * "version":1, "tool":..., "tool_version":..., "config":{...}, ...}.
 * Then "iteration", "checkpoint", "failure", "recovery" and a closing
 * "summary" record. Writers flush after each record so pipes see it at once.
 */
#ifndef SCAR_EVENTS_H
#define SCAR_EVENTS_H

#include <stdio.h>
#include <jansson.h>

#include "scar/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SCAR_EVENTS_FORMAT "scar-events"
#define SCAR_EVENTS_VERSION 1
/*
 * Longest line a reader takes, newline not counted: 4 MiB, far above any
 * record scar-train writes (a failure record naming all 65536 shards is
 * under 0.5 MiB), and small enough that /dev/zero is refused at once.
 */
#define SCAR_EVENTS_LINE_MAX ((size_t)4 << 20)

/*
 * Write one record: rec (an object with a "type") as compact JSON and a
 * newline, then fflush. Reals are printed with 17 significant digits so
 * they round-trip exactly. Does not steal rec. SCAR_EIO on a write error.
 */
int scar_event_write(FILE *out, const json_t *rec, struct scar_error *err);

/*
 * A JSON string of s for a record: exact when s is UTF-8 (every name a
 * checkpoint holds is), else with each stray byte as U+FFFD (a path from
 * argv may be anything), so that a field is never silently dropped. NULL s
 * gives JSON null; NULL only when out of memory.
 */
json_t *scar_json_text(const char *s);

/* A parsed stream. records[i] are owned json_t objects. */
struct scar_events {
	size_t n;
	json_t **records;
};

/*
 * Read a whole stream. A line that is not a JSON object, lacks "type" or is
 * longer than SCAR_EVENTS_LINE_MAX fails with SCAR_EFORMAT and err->line
 * set. The first record must be a header of format "scar-events" with a
 * version in 1..SCAR_EVENTS_VERSION (SCAR_EVERSION for a newer one), and no
 * other record may be a header. Each line holds exactly one JSON object
 * (whitespace around it allowed): text or a second record after it is
 * SCAR_EFORMAT. A read
 * error (SCAR_EIO) or a lack of memory (SCAR_ENOMEM) fails too, with
 * err->line the line being read: a stream is never cut short silently.
 * name is for messages.
 */
int scar_events_read(FILE *in, const char *name, struct scar_events **out,
		     struct scar_error *err);

/*
 * Largest JSON document (a --config file, scar-diff's JSON on stdin) the
 * tools read whole: the event line limit. A stream that never ends is
 * refused at this size instead of handed to jansson.
 */
#define SCAR_JSON_DOC_MAX SCAR_EVENTS_LINE_MAX

/*
 * Read all of in (at most max bytes) as one JSON value, any type, into
 * *out. More than max bytes, a NUL byte, text after the value or bad JSON
 * are SCAR_EFORMAT (err->line set where known); a read error SCAR_EIO.
 */
int scar_json_read_doc(FILE *in, const char *name, size_t max, json_t **out,
		       struct scar_error *err);

/*
 * The checks a reference stream passes, shared by scar-train --reference
 * and scar-bound check. unperturbed: no failure or recovery record
 * (SCAR_EFORMAT, err->line its line). same_run: the reference header's
 * "model", "shards" and "config" equal the given ones, a key absent on both
 * sides counting as equal (SCAR_EMISMATCH).
 */
int scar_events_unperturbed(const json_t *const *records, size_t n, struct scar_error *err);
int scar_events_same_run(const json_t *ref_header, const char *model, const json_t *shards,
			 const json_t *config, struct scar_error *err);
void scar_events_free(struct scar_events *ev);
/* First record of the given type at or after index *pos (may be NULL = 0); NULL if none. */
const json_t *scar_events_find(const struct scar_events *ev, const char *type, size_t *pos);

#ifdef __cplusplus
}
#endif
#endif
