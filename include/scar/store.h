/*
 * scar/store.h - a directory of checkpoints: what the trainers write into
 * it and how they and scar-ckpt find what it holds (scar-ckpt(5)).
 *
 * A directory holds, at iteration N:
 *   ckpt-NNNNNNNNNN.ckpt          one process's checkpoint, the whole view
 *   ckpt-NNNNNNNNNN.rank-R.ckpt   rank R's part of a distributed checkpoint
 *   ckpt-NNNNNNNNNN.manifest      written last: the distributed checkpoint
 *                                 is complete exactly when its manifest
 *                                 verifies (scar_dist_manifest_verify)
 *   .scar.lock                    the one writer's lock (scar_store_lock)
 * and, while a checkpoint is written, its temporary (.NAME.tmp.XXXXXX of
 * scar_tmp_create). Readers take no lock.
 */
#ifndef SCAR_STORE_H
#define SCAR_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "scar/ckpt.h"
#include "scar/error.h"
#include "scar/tensor.h"
#include "scar/train.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SCAR_STORE_LOCK_NAME ".scar.lock"	/* the writer's lock in a checkpoint directory */

/* A directory of checkpoints; dir is borrowed, lock is the lock's descriptor or -1. */
struct scar_store {
	const char *dir;
	int lock;
};

/* A store of dir (may be NULL: no directory), not locked. */
void scar_store_init(struct scar_store *s, const char *dir);

/* ---- naming: the file names into buf; -1 when they do not fit ---- */

/* "ckpt-NNNNNNNNNN.ckpt" */
int scar_store_file_name(char *buf, size_t len, uint64_t iteration);
/* "ckpt-NNNNNNNNNN.rank-R.ckpt" */
int scar_store_rank_file_name(char *buf, size_t len, uint64_t iteration, uint32_t rank);
/* "ckpt-NNNNNNNNNN.manifest" */
int scar_store_manifest_name(char *buf, size_t len, uint64_t iteration);
/* Nonzero when the file name of path is a rank file's, "*.rank-R.ckpt" (R decimal). */
int scar_store_is_rank_file(const char *path);
/*
 * Nonzero when path is a checkpoint a trainer wrote at iteration it
 * (ckpt-N.ckpt or ckpt-N.manifest), not, say, a final state saved there.
 */
int scar_store_is_policy_file(const char *path, uint64_t it);

/* ---- listing ---- */

/* Every *.ckpt file that reads (rank files too), no manifests: scar_ckpt_list. */
#define SCAR_STORE_LIST_FILES 1
/* With SCAR_STORE_LIST_FILES: a file that cannot be read at all is skipped and counted too. */
#define SCAR_STORE_LIST_READABLE 2

/*
 * The checkpoints of the store by iteration, then path. Without flags,
 * each checkpoint once: a single file, or a distributed checkpoint as its
 * manifest, with as size the bytes of the manifest and its rank files
 * (rank files are never listed, also not those whose manifest is missing);
 * damaged files and manifests that are unreadable or incomplete count in
 * *skipped (may be NULL). An I/O error on a file that may be intact is
 * returned (SCAR_EIO, naming it). Free with scar_ckpt_list_free.
 */
int scar_store_list(const struct scar_store *s, unsigned flags, struct scar_ckpt_entry **out,
		    size_t *n, size_t *skipped, struct scar_error *err);

/* ---- the newest complete checkpoint ---- */

/* Called for each checkpoint a resume passes over, with why. */
typedef void (*scar_store_skip_fn)(void *arg, const char *path, const struct scar_error *why);

/*
 * The newest full checkpoint of the store that loads - a complete manifest
 * or a single file, the single file first on a tie - whose configuration
 * the model takes (scar_train_check_resume). Damaged, incomplete or
 * unreadable-as-a-file ones are passed over for the next older one: skip
 * is called for each and *skipped counts them. An I/O error that may hide
 * an intact newer checkpoint is returned instead; SCAR_ENOTFOUND when no
 * full checkpoint loads. used_path (may be NULL) gets the path loaded.
 */
int scar_store_newest(const struct scar_store *s, struct scar_state **out, size_t *skipped,
		      char *used_path, size_t used_len, scar_store_skip_fn skip, void *arg,
		      struct scar_error *err);

/*
 * The resume source of scar-train: a manifest path is loaded as one, a
 * directory as scar_store_newest, anything else (a file, "-") as
 * scar_store_load_single (scar_dist_resume_load).
 */
int scar_store_resume_load(const char *path, struct scar_state **out, size_t *skipped,
			   char *used_path, size_t used_len, scar_store_skip_fn skip, void *arg,
			   struct scar_error *err);

/*
 * A checkpoint file, "-" (stdin), or a directory's newest full single-file
 * checkpoint that loads, damaged newer ones skipped and counted
 * (scar_train_load_resume).
 */
int scar_store_load_single(const char *path, struct scar_state **out, size_t *skipped,
			   char *used_path, size_t used_len, struct scar_error *err);

/* What the resume from path of st passed over (scar_train_resume_scan). */
int scar_store_resume_scan(const char *path, const struct scar_state *st, size_t damaged,
			   struct scar_train_resume_info *info, struct scar_error *err);

/* ---- the saved view ---- */

/*
 * The saved view and the base of full recovery after a resume of st, as
 * the run had them at st's iteration k: into saved (param tensors) the
 * newest full checkpoint the policy wrote at or before k, then its partial
 * checkpoints after that up to k, in order; *last_full becomes that full
 * checkpoint when older than k. Without a full checkpoint at or before k,
 * or s->dir NULL, nothing changes. SCAR_EMISMATCH when it is not of st's
 * run. ages (NULL: not wanted) has per tensor of saved an array (NULL for
 * the tensors not wanted) of two per row: each row gets the iteration of
 * the checkpoint its saved value comes from and the step schedule's point
 * it had reached then (recovery "rewind", lib/rewind.h).
 */
int scar_store_saved_view(const struct scar_store *s, const struct scar_state *st,
			  struct scar_state *saved, struct scar_state **last_full,
			  uint64_t *const *ages, struct scar_error *err);

/* ---- the writer ---- */

/*
 * One writer per directory: take an exclusive flock(2) on dir/.scar.lock
 * (created, holding this process's pid; refused when it is not a regular
 * file or has another name, a hard link) into s->lock, until
 * scar_store_unlock. When another process holds it, SCAR_EIO naming the
 * holder's pid. Holding it, remove the temporaries killed writers left
 * (.ckpt-*.ckpt.tmp.*, .ckpt-*.manifest.tmp.*) that are older than the lock.
 */
int scar_store_lock(struct scar_store *s, struct scar_error *err);
/* Remove the lock file and release the lock; nothing when not held. */
void scar_store_unlock(struct scar_store *s);

/* A rank file's size and CRC-32C, as the ranks exchange them for the manifest. */
struct scar_store_part {
	uint64_t size;
	uint32_t crc32c, pad;
};

/*
 * What the ranks of a distributed writer do together (all collectives,
 * every rank calls each): agree on the outcome rc (the same on all);
 * gather every rank's part into all[0..ranks) at rank 0 (all is NULL
 * elsewhere); give rank 0's *v to every rank.
 */
struct scar_store_comm {
	int (*agree)(void *arg, int rc);
	void (*gather)(void *arg, const struct scar_store_part *mine, struct scar_store_part *all);
	void (*bcast)(void *arg, uint64_t *v);
	void *arg;
};

/* ---- checkpoints by a policy, for another trainer (lib/ckpt_policy.c) ---- */

struct scar_store_policy_result {
	int wrote;		/* a checkpoint was written (else not a checkpoint iteration) */
	int full;		/* it was full */
	uint64_t rows, bytes;	/* param rows written, their bytes */
	uint64_t file_bytes;	/* the file's size */
};

/*
 * Checkpoint snapshot st (its iteration the caller's; its param tensors
 * the rows) into the store's directory by policy o (policy, interval,
 * fraction and fail_seed, as scar-train's options): against the saved view
 * the directory keeps in .scar-view.ckpt, the rows scar-train's policy
 * would write at that iteration (scar_train_policy_select) go into
 * ckpt-N.ckpt, as scar-train writes it, and into the view. The first call
 * on a directory writes a full checkpoint (scar-train's iteration 0); an
 * iteration that is not a checkpoint iteration of the schedule writes
 * nothing (res->wrote 0). The caller holds the store's lock. Refused: a
 * snapshot whose parameter tensors differ from the view's (SCAR_EMISMATCH
 * naming the first), an iteration not after the last (SCAR_EINVAL), a
 * policy other than the view's unless force (SCAR_EINVAL). st's extra gets
 * the clock and schedule. The files are fsynced when sync, and compressed
 * on threads threads (0: 1), the same bytes for every count.
 */
int scar_store_policy_checkpoint(const struct scar_store *s, const struct scar_train_opts *o,
				 struct scar_state *st, int force, int sync, unsigned threads,
				 struct scar_store_policy_result *res, struct scar_error *err);

/*
 * The same for a run of snapshots (scar-ckpt save --stream): open reads the
 * directory once - its newest checkpoint and its saved view, checked as
 * above - and keeps the view in memory; each put is one
 * scar_store_policy_checkpoint call on it, writing the same files, without
 * reading the directory again. The caller holds the store's lock from open
 * to close (nobody else may write the directory meanwhile). The policy is
 * held against the view file's at the first put (after its layout check, as
 * a call makes them). After a put that failed while writing, every later
 * put fails with SCAR_EINVAL (the view in memory may no longer be the
 * directory's); a refused snapshot (SCAR_EMISMATCH, an iteration not after
 * the last) changes nothing. s and o are copied or borrowed until close;
 * close(NULL) does nothing.
 */
struct scar_store_policy;
int scar_store_policy_open(struct scar_store_policy **out, const struct scar_store *s,
			   const struct scar_train_opts *o, int force, int sync, unsigned threads,
			   struct scar_error *err);
int scar_store_policy_put(struct scar_store_policy *p, struct scar_state *st,
			  struct scar_store_policy_result *res, struct scar_error *err);
void scar_store_policy_close(struct scar_store_policy *p);

struct scar_store_write_opts {
	int compress, sync;		/* as scar_ckpt_save_opts */
	unsigned threads;		/* as scar_ckpt_save_opts (0: 1) */
	int shuffle;			/* as scar_ckpt_save_opts (0: off) */
	uint64_t clock;			/* the trainer's clock, for the manifest */
	int partial;			/* for the manifest */
	uint32_t rank, ranks;
	const struct scar_store_comm *comm;	/* NULL: one process */
};

/*
 * Write the checkpoint view: one process (comm NULL) writes it as
 * ckpt-N.ckpt and *bytes is the file's size; distributed, each rank writes
 * its view as its rank file, and once every rank has (an agreement), rank
 * 0 writes the manifest of them all; *bytes is the rank files' total on
 * every rank.
 */
int scar_store_write(const struct scar_store *s, const struct scar_state *view,
		     const struct scar_store_write_opts *o, uint64_t *bytes,
		     struct scar_error *err);

/* ---- the background writer (lib/store_async.c) ---- */

#define SCAR_STORE_ASYNC_MAX 64		/* most checkpoints in flight */

/*
 * A thread that writes snapshots with scar_store_write (one process: comm
 * NULL) in the order they are submitted, at most max_in_flight (1 to
 * SCAR_STORE_ASYNC_MAX) submitted and not yet collected. A checkpoint is
 * durable once collected with rc 0 (renamed, and fsynced with its
 * directory when wo.sync).
 *
 * prepare (NULL: none) is called on the writer thread with each job's tag
 * and options before its write, in submission order, each job prepared as
 * soon as the thread is free (before writes still to do): it may fill in
 * the snapshot and wo; nonzero (err filled in) skips the write and is the
 * job's rc.
 */
struct scar_store_async;

typedef int (*scar_store_async_prepare_fn)(void *tag, struct scar_store_write_opts *wo,
					   struct scar_error *err);

struct scar_store_async_result {
	void *tag;		/* as submitted */
	int rc;			/* scar_store_write's */
	uint64_t bytes;		/* the file's size */
	double seconds;		/* the job's time in the background (prepare and write) */
	struct scar_error err;
};

int scar_store_async_open(struct scar_store_async **a, const struct scar_store *s,
			  unsigned max_in_flight, scar_store_async_prepare_fn prepare,
			  struct scar_error *err);
/*
 * Queue snap with tag; -1 with nothing queued when max_in_flight are
 * already in flight: collect first. snap stays the caller's, who must not
 * change or free it until it is collected (or the writer closed).
 */
int scar_store_async_submit(struct scar_store_async *a, struct scar_state *snap,
			    const struct scar_store_write_opts *wo, void *tag);
/*
 * The oldest checkpoint in flight once written: 1 and *res filled, or 0
 * when none is in flight or (wait 0) the oldest is still being written.
 */
int scar_store_async_collect(struct scar_store_async *a, int wait,
			     struct scar_store_async_result *res);
/* Wait until every job submitted has been prepared (its write may still be going). */
void scar_store_async_prepared(struct scar_store_async *a);
/* Write what is queued, stop the thread, free a (NULL: nothing). */
void scar_store_async_close(struct scar_store_async *a);

#ifdef __cplusplus
}
#endif
#endif
