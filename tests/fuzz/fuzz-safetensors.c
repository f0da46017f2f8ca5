/*
 * fuzz-safetensors - the safetensors header parser on raw JSON, and the
 * whole reader on a file: open, read every tensor, load.
 */
#include <jansson.h>

#include "scar/arrayfile.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scar_array_info *tensors = NULL;
	struct scar_arrayfile *f;
	struct scar_state *st;
	struct scar_error err;
	json_t *meta = NULL;
	size_t n = 0;
	char path[64];
	int fd;

	/* The parser alone: the input is the header JSON, the file 4 KB past it. */
	if (scar_safetensors_parse((const char *)data, size, 8 + (uint64_t)size,
				   8 + (uint64_t)size + 4096, &tensors, &n, &meta, &err) == 0) {
		free(tensors);
		json_decref(meta);
	}
	fd = fuzz_memfd(data, size);
	if (fd < 0)
		return 0;
	fuzz_fd_path(fd, path, sizeof(path));
	if (scar_arrayfile_open(&f, path, &err) == 0) {
		size_t cnt = scar_arrayfile_count(f);

		(void)scar_arrayfile_metadata(f);
		for (size_t i = 0; i < cnt && i < 64; i++) {
			const struct scar_array_info *ai = scar_arrayfile_tensor(f, i);
			struct scar_tensor *t = NULL;

			if (ai && ai->nbytes <= (16u << 20) &&
			    scar_arrayfile_load_tensor(f, i, &t, &err) == 0)
				scar_tensor_free(t);
		}
		scar_arrayfile_close(f);
	}
	if (scar_array_load(path, &st, &err) == 0)
		scar_state_free(st);
	close(fd);
	return 0;
}
