/*
 * bench-shuffle.c - the byte shuffle of format 1.3 against plain LZ4 on
 * given checkpoints, through the public API, for bench/bench-shuffle.sh.
 *
 *   bench-shuffle [-n RUNS] [-t THREADS] FILE...
 *
 * Each FILE is loaded once, then for each of --shuffle off, on and auto it
 * is written (no fsync, to a file beside TMPDIR's) and read back
 * (scar_ckpt_load: decode, check, unshuffle) RUNS times (default 7), each
 * run repeating the operation for at least 0.2 CPU seconds. One line per
 * file and mode:
 *
 *   FILE MODE bytes B ratio R shuffled K/N write W read D
 *
 * B the file's size, R the tensors' bytes over B, K of N sections shuffled,
 * W and D the median MB (10^6 bytes of tensors) per CPU second of the whole
 * process (CPU time, not wall: the machine may be busy). The file written
 * in each mode is checked to load equal to the input.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/tensor.h"

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what, const struct scar_error *e)
{
	fprintf(stderr, "bench-shuffle: %s: %s\n", what, e ? e->msg : strerror(errno));
	exit(2);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static uint64_t tensor_bytes(const struct scar_state *st)
{
	uint64_t n = 0;

	for (size_t i = 0; i < st->ntensors; i++)
		n += scar_tensor_bytes(st->tensors[i]);
	return n;
}

static int same(const struct scar_state *a, const struct scar_state *b)
{
	if (a->ntensors != b->ntensors)
		return 0;
	for (size_t i = 0; i < a->ntensors; i++)
		if (!scar_tensor_same_layout(a->tensors[i], b->tensors[i]) ||
		    memcmp(a->tensors[i]->data, b->tensors[i]->data, scar_tensor_bytes(a->tensors[i])))
			return 0;
	return 1;
}

/* Median of runs of seconds per operation, each run at least 0.2 CPU seconds. */
static double seconds_per(int runs, int write, const struct scar_state *st, const char *path,
			  const struct scar_ckpt_save_opts *o)
{
	double *v = malloc((size_t)runs * sizeof(*v)), med;
	struct scar_error e;

	if (!v)
		die("out of memory", NULL);
	for (int r = 0; r < runs; r++) {
		double t0 = cpu_now(), t;
		long k = 0;

		do {
			struct scar_state *ld = NULL;

			if (write ? scar_ckpt_save(st, path, o, &e) : scar_ckpt_load(path, &ld, &e))
				die(path, &e);
			scar_state_free(ld);
			k++;
		} while ((t = cpu_now() - t0) < 0.2);
		v[r] = t / (double)k;
	}
	qsort(v, (size_t)runs, sizeof(*v), cmp_double);
	med = v[runs / 2];
	free(v);
	return med;
}

int main(int argc, char **argv)
{
	const char *tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char path[4096];
	int runs = 7, c;
	unsigned threads = 1;

	while ((c = getopt(argc, argv, "n:t:")) != -1) {
		if (c == 'n' && atoi(optarg) > 0)
			runs = atoi(optarg);
		else if (c == 't' && atoi(optarg) > 0)
			threads = (unsigned)atoi(optarg);
		else {
			fprintf(stderr, "usage: bench-shuffle [-n RUNS] [-t THREADS] FILE...\n");
			return 2;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "usage: bench-shuffle [-n RUNS] [-t THREADS] FILE...\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/bench-shuffle.%ld.ckpt", tmpdir, (long)getpid());
	for (int i = optind; i < argc; i++) {
		struct scar_state *st = NULL, *ld = NULL;
		struct scar_error e;
		uint64_t raw;

		if (scar_ckpt_load(argv[i], &st, &e))
			die(argv[i], &e);
		raw = tensor_bytes(st);
		for (int mode = SCAR_SHUFFLE_OFF; mode <= SCAR_SHUFFLE_AUTO; mode++) {
			struct scar_ckpt_save_opts o;
			struct scar_ckpt_reader *r;
			struct scar_ckpt_section sec;
			double w, rd;
			long size;
			int n = 0, k = 0, rc;
			FILE *f;

			scar_ckpt_save_opts_init(&o);
			o.sync = 0;
			o.threads = threads;
			o.shuffle = mode;
			w = seconds_per(runs, 1, st, path, &o);
			rd = seconds_per(runs, 0, st, path, &o);
			if (scar_ckpt_load(path, &ld, &e))
				die(path, &e);
			if (!same(st, ld)) {
				fprintf(stderr, "bench-shuffle: %s: --shuffle %s does not load back equal\n",
					argv[i], scar_shuffle_name(mode));
				return 1;
			}
			scar_state_free(ld);
			if (scar_ckpt_reader_open(&r, path, &e))
				die(path, &e);
			while ((rc = scar_ckpt_reader_next(r, &sec, &e)) == 1) {
				n++;
				k += sec.info.shuffled;
			}
			if (rc < 0)
				die(path, &e);
			scar_ckpt_reader_close(r);
			if (!(f = fopen(path, "rb")) || fseek(f, 0, SEEK_END) || (size = ftell(f)) <= 0)
				die(path, NULL);
			fclose(f);
			printf("%s %s bytes %ld ratio %.3f shuffled %d/%d write %.1f read %.1f\n", argv[i],
			       scar_shuffle_name(mode), size, (double)raw / (double)size, k, n,
			       (double)raw / w / 1e6, (double)raw / rd / 1e6);
			fflush(stdout);
		}
		scar_state_free(st);
	}
	unlink(path);
	return 0;
}
