/* fuzz-movielens - the MovieLens ratings reader (u.data, ratings.dat, CSV) and split. */
#include "scar/data.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scar_ratings *r = NULL, *tr = NULL, *te = NULL;
	struct scar_error err;
	char path[64];
	int fd = fuzz_memfd(data, size);

	if (fd < 0)
		return 0;
	fuzz_fd_path(fd, path, sizeof(path));
	if (scar_movielens_load(path, &r, &err) == 0) {
		if (scar_ratings_split(r, 0.25, 7, &tr, &te, &err) == 0) {
			scar_ratings_free(tr);
			scar_ratings_free(te);
		}
		scar_ratings_free(r);
	}
	close(fd);
	return 0;
}
