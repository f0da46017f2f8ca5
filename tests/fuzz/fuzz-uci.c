/*
 * fuzz-uci - the UCI bag-of-words reader. The first byte picks docword only
 * or docword and vocab; the next two say where the docword file ends.
 */
#include "scar/data.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scar_corpus *c = NULL;
	struct scar_error err;
	char dpath[64], vpath[64];
	size_t split;
	int fd, fv = -1;

	if (size < 3)
		return 0;
	split = (size_t)data[1] | (size_t)data[2] << 8;
	if (split > size - 3)
		split = size - 3;
	if (data[0] & 1) {
		fd = fuzz_memfd(data + 3, split);
		fv = fuzz_memfd(data + 3 + split, size - 3 - split);
	} else {
		fd = fuzz_memfd(data + 3, size - 3);
	}
	if (fd < 0 || ((data[0] & 1) && fv < 0))
		goto out;
	fuzz_fd_path(fd, dpath, sizeof(dpath));
	if (fv >= 0)
		fuzz_fd_path(fv, vpath, sizeof(vpath));
	if (scar_uci_bow_load(dpath, fv >= 0 ? vpath : NULL, &c, &err) == 0)
		scar_corpus_free(c);
out:
	if (fd >= 0)
		close(fd);
	if (fv >= 0)
		close(fv);
	return 0;
}
