/*
 * scar/dist.h - distributed training on MPI: each rank is the parameter
 * server of its shards and a worker over its partition of the data (see
 * scar-mpi(7) for the design, the reduction order and the cost model).
 *
 * Two halves:
 *   - MPI-free (always in libscar): the ownership rule, the data partition,
 *     the checkpoint manifest, loading a distributed checkpoint as one.
 *   - MPI: scar_dist_init/finalize/active/rank/size and
 *     scar_dist_train_run, in every build; without SCAR_MPI (`make` found
 *     no mpicc) they give the one-process values and scar_dist_train_run
 *     fails, SCAR_EUNSUPPORTED.
 * The trainer (lib/dist_mpi.c) knows no model: a model's distributed step
 * is its struct scar_model_dist (scar/model.h), in its own lib/model_*.c,
 * over the ranks' transport (lib/transport.h).
 *
 * THE RULES (also in scar-mpi(7)):
 *   shard s of S is owned by rank (s mod P); so row r of a parameter tensor
 *   is owned by rank ((r mod S) mod P). State tensors belong to rank 0.
 *   Example i of n is in the data partition of rank R when
 *   lo(R) <= i < lo(R + 1), lo(R) = R * (n / P) + min(R, n mod P): contiguous
 *   blocks, the first (n mod P) ranks one example longer.
 *
 * A distributed checkpoint at iteration N in directory D is the rank files
 * D/ckpt-NNNNNNNNNN.rank-R.ckpt (each a valid scar-ckpt(5) file holding the
 * rows rank R owns as a partial checkpoint; rank 0's also holds the state
 * tensors when the checkpoint is full) and the manifest
 * D/ckpt-NNNNNNNNNN.manifest, written last, after every rank file is on
 * disk. The checkpoint is complete exactly when its manifest exists and
 * every file it lists has the listed size and CRC-32C.
 */
#ifndef SCAR_DIST_H
#define SCAR_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "scar/ckpt.h"
#include "scar/error.h"
#include "scar/store.h"
#include "scar/tensor.h"
#include "scar/train.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SCAR_DIST_MANIFEST_FORMAT "scar-dist-manifest"
#define SCAR_DIST_MANIFEST_VERSION 2	/* 2: ends in a checksum member; 1 is refused */
#define SCAR_DIST_MANIFEST_MAX (16u << 20)	/* bytes a manifest may have */
#define SCAR_DIST_LOCK_NAME SCAR_STORE_LOCK_NAME	/* the writer's lock in a checkpoint directory */

/* Rank that owns shard s when there are P ranks (P >= 1). */
static inline uint32_t scar_dist_shard_owner(uint32_t s, uint32_t P)
{
	return s % P;
}

/* Rank that owns row r of a parameter tensor with S shards over P ranks. */
static inline uint32_t scar_dist_row_owner(uint64_t r, uint32_t S, uint32_t P)
{
	return (uint32_t)(r % S) % P;
}

/* First example of rank R's data partition of n examples over P ranks (R = P gives n). */
uint64_t scar_dist_part_lo(uint64_t n, uint32_t R, uint32_t P);

/*
 * The fixed reduction order: the sum of P partial values v[0..P-1] is
 * ((v[0] + v[1]) + v[2]) + ... in rank order, whatever MPI's own
 * collectives would do. Returns 0 for P = 0.
 */
double scar_dist_sum_ordered(const double *v, uint32_t P);

/* Size and CRC-32C of a whole file (SCAR_ENOTFOUND when it cannot be opened). */
int scar_dist_file_crc(const char *path, uint64_t *size, uint32_t *crc, struct scar_error *err);

/* ---- the manifest ---- */

struct scar_dist_file {
	char name[256];			/* file name within the manifest's directory */
	uint32_t rank;
	uint64_t size;			/* bytes */
	uint32_t crc32c;		/* of the whole file */
};

struct scar_dist_manifest {
	char model[SCAR_NAME_MAX];
	uint64_t iteration;		/* the state's iteration */
	uint64_t clock;			/* the trainer's clock */
	uint32_t ranks, shards;
	int partial;			/* a partial-policy checkpoint (param rows subset) */
	size_t nfiles;
	struct scar_dist_file *files;	/* owned */
};

/*
 * "ckpt-NNNNNNNNNN.rank-R.ckpt" and "ckpt-NNNNNNNNNN.manifest" into buf; -1 when too long
 * (wrappers of scar_store_rank_file_name and scar_store_manifest_name).
 */
int scar_dist_rank_file_name(char *buf, size_t len, uint64_t iteration, uint32_t rank);
int scar_dist_manifest_name(char *buf, size_t len, uint64_t iteration);

/*
 * Write m as JSON to path atomically (temporary file .NAME.tmp.XXXXXX of
 * scar_tmp_create, removed should a signal end the process; fsync when sync, rename, fsync of the directory when sync). The manifest is
 * one compact JSON object and a newline (scar-ckpt(5), MANIFESTS):
 *   {"format":"scar-dist-manifest","version":2,"model":...,"iteration":N,
 *    "clock":K,"ranks":P,"shards":S,"kind":"full"|"partial",
 *    "files":[{"rank":R,"name":...,"size":B,"crc32c":C},...],
 *    "checksum":"HHHHHHHH"}
 * where HHHHHHHH is the CRC-32C of every byte before ',"checksum"', in
 * lowercase hexadecimal: any single-bit flip of the file is refused.
 */
int scar_dist_manifest_write(const char *path, const struct scar_dist_manifest *m, int sync,
			     struct scar_error *err);

/*
 * Read and check a manifest (a regular file: a FIFO is refused, never
 * waited on): its checksum, format, version and fields; each rank listed
 * once, under a plain "*.ckpt" name in the manifest's own directory (no
 * '/', no leading '.'). A version 1 manifest (no checksum) is refused,
 * SCAR_EFORMAT. *out owns a new one.
 */
int scar_dist_manifest_read(const char *path, struct scar_dist_manifest **out,
			    struct scar_error *err);
/*
 * The same for a manifest found in a directory listing: a symbolic link is
 * refused too (SCAR_EFORMAT), as a directory's checkpoints are what it
 * holds itself, not what its links point to.
 */
int scar_dist_manifest_read_entry(const char *path, struct scar_dist_manifest **out,
				  struct scar_error *err);
void scar_dist_manifest_free(struct scar_dist_manifest *m);

/*
 * The one check of a manifest against its files, which every reader
 * (scar-ckpt verify, info, ls, convert, apply; loads and so resumes) goes
 * through: every file the manifest at path lists exists next to it with
 * the listed size and CRC-32C, a regular file, not a symbolic link, a
 * different file for each rank; each file's header gives the manifest's
 * model, iteration and shard count and rank 0's tensor layouts; with kind
 * "full" every row of every tensor is in some file, with "partial" some
 * file is partial (scar-ckpt(5), MANIFESTS). 0 when complete,
 * SCAR_ECORRUPT, SCAR_ENOTFOUND or SCAR_EFORMAT naming the file otherwise.
 */
int scar_dist_manifest_verify(const char *path, const struct scar_dist_manifest *m,
			      struct scar_error *err);

/*
 * Load the distributed checkpoint of the manifest at path as one state:
 * verify it, then apply the rank files in rank order (scar_ckpt_apply).
 * A full checkpoint gives a full state (no present maps); a partial one a
 * partial state. extra.clock is the manifest's clock.
 */
int scar_dist_manifest_load(const char *path, struct scar_state **out, struct scar_error *err);

/*
 * The resume source for scar-train: a manifest path is loaded as one; a
 * directory gives its newest full checkpoint that loads - a manifest
 * (complete: every rank file there with its size and CRC-32C, and of the
 * manifest's model and iteration) or a single file, the single file first
 * on a tie. Damaged, incomplete or unreadable-as-a-file ones (a FIFO, a
 * symbolic link for a manifest) are passed over for the next older one:
 * skip(arg, path, why) is called for each and *skipped counts them. An I/O
 * error that may hide an intact newer checkpoint is returned instead;
 * SCAR_ENOTFOUND when no full checkpoint loads. Anything else goes to
 * scar_train_load_resume. (A wrapper of scar_store_resume_load.)
 */
typedef scar_store_skip_fn scar_dist_skip_fn;
int scar_dist_resume_load(const char *path, struct scar_state **out, size_t *skipped,
			  char *used_path, size_t used_len, scar_dist_skip_fn skip, void *arg,
			  struct scar_error *err);
/* The same without the callback. */
int scar_dist_load_resume(const char *path, struct scar_state **out, size_t *skipped,
			  char *used_path, size_t used_len, struct scar_error *err);

/*
 * Survivor files (scar-mpi(7), Real failures): the ranks that outlived a
 * rank's death wrote dir/survivor-N.rank-R.ckpt, their rows at iteration
 * N. scar_dist_survivors takes those of the newest N, when N is after st's
 * clock (st: the checkpoint --resume loaded) and every one is of st's run:
 * st gets their rows exactly, their state tensors and iteration N, and
 * sv->lost (S bytes, malloc'd) the shards none of them holds, which the
 * resumed run restores as a failure of those shards at N, and
 * sv->recovery the strategy that run recovered with (-1: the file does
 * not say, or says what this build does not know). Otherwise st is
 * unchanged, sv->iter is 0 and sv->why says why when there were survivor
 * files. Errors: reading the directory, memory.
 */
struct scar_dist_survivors {
	uint64_t iter;		/* 0: none used */
	size_t nfiles, older;	/* files used; files of older iterations passed over */
	uint32_t ranks;		/* the P of the run that wrote them */
	uint8_t *lost;
	uint32_t nlost;
	int recovery;		/* enum scar_recovery of the run, or -1 */
	char why[512];
};
int scar_dist_survivors(const char *dir, struct scar_state *st, struct scar_dist_survivors *sv,
			struct scar_error *err);

/*
 * One writer per checkpoint directory: take an exclusive flock(2) on
 * dir/.scar.lock (created, holding this process's pid; refused when it is
 * not a regular file or has another name, a hard link) and keep it until
 * scar_dist_dir_unlock. When another process holds it, SCAR_EIO with a
 * message naming the holder's pid. Holding it, remove the temporaries
 * killed writers left (.ckpt-*.ckpt.tmp.*, .ckpt-*.manifest.tmp.*): no
 * live writer owns them. Readers take no lock. *fd is the lock's
 * descriptor (close-on-exec). Wrappers of scar_store_lock and scar_store_unlock.
 */
int scar_dist_dir_lock(const char *dir, int *fd, struct scar_error *err);
/* Remove the lock file and release the lock; fd < 0 does nothing. */
void scar_dist_dir_unlock(const char *dir, int fd);

/* Nonzero when the file name of path is a rank file's, "*.rank-R.ckpt" (R decimal). */
int scar_dist_is_rank_file(const char *path);
/* Nonzero when path names a distributed checkpoint's manifest ("*.manifest"). */
int scar_dist_is_manifest(const char *path);

/*
 * The checkpoints of directory dir as scar_ckpt_list gives them (by
 * iteration, then path), each distributed checkpoint once: its manifest,
 * as an entry whose path is the manifest, with its iteration and kind and
 * as size the bytes of the manifest and its rank files. Rank files are
 * never listed, also not those of a checkpoint whose manifest is missing
 * (a crash before it was written); a manifest that cannot be read or is
 * incomplete (scar_dist_manifest_verify) counts in *skipped, as a damaged
 * single file does. Free with scar_ckpt_list_free. (scar_store_list without flags.)
 */
int scar_dist_ckpt_list(const char *dir, struct scar_ckpt_entry **out, size_t *n,
			size_t *skipped, struct scar_error *err);

/* ---- MPI (without SCAR_MPI: the one-process values, see above) ---- */

/*
 * Initialise MPI when `launched` is nonzero (the command decides that from
 * the launcher's environment, e.g. OMPI_COMM_WORLD_SIZE, PMIX_RANK or
 * PMI_SIZE: the library reads no environment); otherwise do nothing, so a
 * plain run pays nothing. Call once, before anything else reads argv.
 */
int scar_dist_init(int launched, int *argc, char ***argv, struct scar_error *err);

/* Finalize MPI if scar_dist_init started it; safe to call twice (e.g. from atexit). */
void scar_dist_finalize(void);

/*
 * Rank 0's v, returned on every rank (a collective: every rank must call
 * it); v itself when MPI is not running. For a command's decisions that
 * one rank makes for all, e.g. creating the checkpoint directory.
 */
int scar_dist_bcast_int(int v);
/*
 * The largest v of all ranks, on every rank (a collective, so also a
 * barrier: no rank returns before every rank has called it); v itself when
 * MPI is not running.
 */
int scar_dist_max_int(int v);

/* Nonzero when MPI is running with more than one rank. */
int scar_dist_active(void);
/* This process's rank (0 when not distributed) and the number of ranks (1). */
int scar_dist_rank(void);
int scar_dist_size(void);

/*
 * scar_train_run over the MPI ranks: same options, same events (rank 0
 * writes them; other ranks write none, whatever opts->events says), same
 * result on every rank (final_state is the full state on every rank; let
 * rank 0 alone save it). Runs the workloads whose definition has a dist member (ridge, mlr, mf, lda);
 * others fail with SCAR_EUNSUPPORTED ("model 'x' does not run
 * distributed yet"). Errors are agreed: every rank returns the same code
 * and message, so a command can report it from rank 0 alone. With
 * opts->ckpt_dir, checkpoints are rank files plus a manifest (above).
 * The header record adds "ranks"; the summary adds "comm_bytes", the
 * bytes all ranks sent each other during training (reference run excluded).
 */
int scar_dist_train_run(const struct scar_train_opts *opts, struct scar_train_result *res,
			struct scar_error *err);

#ifdef __cplusplus
}
#endif
#endif
