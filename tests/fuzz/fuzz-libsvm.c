/*
 * fuzz-libsvm - the LIBSVM / svmlight reader. The first byte picks
 * classification and a fixed dimension; the rest is the file.
 */
#include "scar/data.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scar_dense *ds = NULL;
	struct scar_error err;
	char path[64];
	int fd;

	if (size < 1)
		return 0;
	fd = fuzz_memfd(data + 1, size - 1);
	if (fd < 0)
		return 0;
	fuzz_fd_path(fd, path, sizeof(path));
	if (scar_libsvm_load(path, (data[0] & 2) ? (uint64_t)(data[0] >> 2) : 0, data[0] & 1,
			     &ds, &err) == 0)
		scar_dense_free(ds);
	close(fd);
	return 0;
}
