/* fuzz-events - the JSON-lines event-stream reader on hostile text. */
#include "scar/events.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scar_events *ev = NULL;
	struct scar_error err;
	FILE *f;

	if (size == 0)
		return 0;	/* fmemopen refuses an empty buffer */
	f = fmemopen((void *)(uintptr_t)data, size, "r");
	if (!f)
		return 0;
	if (scar_events_read(f, "fuzz", &ev, &err) == 0) {
		size_t pos = 0;

		while (scar_events_find(ev, "iteration", &pos))
			pos++;
		scar_events_free(ev);
	}
	fclose(f);
	return 0;
}
