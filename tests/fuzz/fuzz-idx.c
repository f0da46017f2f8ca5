/*
 * fuzz-idx - the IDX (MNIST) reader, plain or gzip. The first byte picks
 * images only or images and labels; the next two say where the images end.
 */
#include "scar/data.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scar_dense *ds = NULL;
	struct scar_error err;
	char ipath[64], lpath[64];
	size_t split;
	int fi, fl = -1;

	if (size < 3)
		return 0;
	split = (size_t)data[1] | (size_t)data[2] << 8;
	if (split > size - 3)
		split = size - 3;
	if (data[0] & 1) {
		fi = fuzz_memfd(data + 3, split);
		fl = fuzz_memfd(data + 3 + split, size - 3 - split);
	} else {
		fi = fuzz_memfd(data + 3, size - 3);
	}
	if (fi < 0 || ((data[0] & 1) && fl < 0))
		goto out;
	fuzz_fd_path(fi, ipath, sizeof(ipath));
	if (fl >= 0)
		fuzz_fd_path(fl, lpath, sizeof(lpath));
	if (scar_idx_load(ipath, fl >= 0 ? lpath : NULL, &ds, &err) == 0)
		scar_dense_free(ds);
out:
	if (fi >= 0)
		close(fi);
	if (fl >= 0)
		close(fl);
	return 0;
}
