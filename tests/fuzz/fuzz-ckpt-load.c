/* fuzz-ckpt-load - the whole-file checkpoint reader and verifier on hostile bytes. */
#include "scar/ckpt.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scar_state *st = NULL;
	struct scar_error err;
	char path[64];
	int fd = fuzz_memfd(data, size);

	if (fd < 0)
		return 0;
	if (scar_ckpt_load_fd(fd, "fuzz", &st, &err) == 0)
		scar_state_free(st);
	fuzz_fd_path(fd, path, sizeof(path));
	(void)scar_ckpt_verify(path, &err);
	close(fd);
	return 0;
}
