/*
 * fuzz-ckpt-stream - the streaming checkpoint reader: sections in file
 * order, the index and random access on a seekable file, and the same
 * bytes arriving down a pipe (no seeking) when they fit its buffer.
 */
#include <fcntl.h>

#include "scar/ckpt.h"

#include "fuzz.h"

static void drain(struct scar_ckpt_reader *r)
{
	struct scar_ckpt_section sec;
	struct scar_error err;
	int guard = 0;

	(void)scar_ckpt_reader_info(r);
	while (scar_ckpt_reader_next(r, &sec, &err) == 1 && guard++ < 100000)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scar_ckpt_reader *r;
	struct scar_error err;
	int fd = fuzz_memfd(data, size), p[2];

	if (fd < 0)
		return 0;
	if (scar_ckpt_reader_open_fd(&r, fd, "fuzz", &err) == 0) {
		drain(r);
		scar_ckpt_reader_close(r);
	}
	if (lseek(fd, 0, SEEK_SET) == 0 && scar_ckpt_reader_open_fd(&r, fd, "fuzz", &err) == 0) {
		const struct scar_ckpt_section_info *idx;
		const struct scar_ckpt_info *info = scar_ckpt_reader_info(r);
		int n = scar_ckpt_reader_index(r, &idx, &err);

		for (int i = 0; i < n && i < 1000; i++) {
			struct scar_ckpt_section sec;

			(void)scar_ckpt_reader_section(r, idx[i].tensor, idx[i].shard, &sec, &err);
		}
		/* Sections the index does not name must fail cleanly too. */
		if (info && info->ntensors) {
			struct scar_ckpt_section sec;

			(void)scar_ckpt_reader_section(r, (uint32_t)info->ntensors, 0, &sec, &err);
			(void)scar_ckpt_reader_section(r, 0, info->shards + 1, &sec, &err);
		}
		(void)scar_ckpt_reader_offset(r);
		scar_ckpt_reader_close(r);
	}
	close(fd);
	if (size <= 65536 && pipe(p) == 0) {
		size_t off = 0;

		fcntl(p[1], F_SETFL, O_NONBLOCK);
		while (off < size) {
			ssize_t w = write(p[1], data + off, size - off);

			if (w <= 0)
				break;
			off += (size_t)w;
		}
		close(p[1]);
		if (off == size && scar_ckpt_reader_open_fd(&r, p[0], "pipe", &err) == 0) {
			const struct scar_ckpt_section_info *idx;

			(void)scar_ckpt_reader_index(r, &idx, &err);
			drain(r);
			scar_ckpt_reader_close(r);
		}
		close(p[0]);
	}
	return 0;
}
