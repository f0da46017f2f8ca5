/*
 * fuzz-npy - the .npy reader (and whatever the sniffer takes the bytes for):
 * open by path, by descriptor with head bytes, read every tensor, load whole.
 */
#include "scar/arrayfile.h"

#include "fuzz.h"

static void read_all(struct scar_arrayfile *f)
{
	size_t n = scar_arrayfile_count(f);

	(void)scar_arrayfile_format(f);
	(void)scar_arrayfile_metadata(f);
	for (size_t i = 0; i < n && i < 64; i++) {
		const struct scar_array_info *ai = scar_arrayfile_tensor(f, i);
		struct scar_tensor *t = NULL;
		struct scar_error err;
		unsigned char buf[64];

		if (!ai)
			continue;
		(void)scar_arrayfile_find(f, ai->name);
		if (ai->nbytes >= 8)
			(void)scar_arrayfile_read(f, i, 0, buf, 8, &err);
		if (ai->nbytes <= (16u << 20) && scar_arrayfile_load_tensor(f, i, &t, &err) == 0)
			scar_tensor_free(t);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scar_arrayfile *f;
	struct scar_state *st;
	struct scar_error err;
	char path[64];
	size_t head = size < 16 ? size : 16;
	int fd = fuzz_memfd(data, size);

	if (fd < 0)
		return 0;
	(void)scar_array_sniff(data, size);
	fuzz_fd_path(fd, path, sizeof(path));
	if (scar_arrayfile_open(&f, path, &err) == 0) {
		read_all(f);
		scar_arrayfile_close(f);
	}
	if (lseek(fd, (off_t)head, SEEK_SET) == (off_t)head &&
	    scar_arrayfile_open_fd(&f, fd, "fuzz", data, head, &err) == 0) {
		read_all(f);
		scar_arrayfile_close(f);
	}
	if (scar_array_load(path, &st, &err) == 0)
		scar_state_free(st);
	close(fd);
	return 0;
}
