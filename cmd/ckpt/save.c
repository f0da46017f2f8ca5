/*
 * save.c - scar-ckpt save: checkpoint another trainer's snapshot into a run
 * directory by a policy, as scar-train would (the work is
 * scar_store_policy_checkpoint, lib/ckpt_policy.c), and say so in one
 * scar-events checkpoint line on stdout. With --stream, SNAPSHOT is a run
 * of snapshots (lib/arrayfile_stream.c), each handled as a call would
 * handle it, against the saved view kept in memory.
 */
#include "ckpt.h"
#include "scar/store.h"
#include "scar/train.h"

/* The snapshot: a scar checkpoint, or a safetensors or .npy file (param tensors, shards S). */
static struct scar_state *load_snapshot(const char *path, uint64_t shards, int *is_array)
{
	struct scar_state *st = NULL;
	struct scar_error e;

	scar_error_clear(&e);
	*is_array = 0;
	if (scar_array_sniff_file(path)) {
		*is_array = 1;
		if (!shards)
			cli_usage_error("'%s' is a snapshot, which has no shard count: give --shards S "
					"(row r of a tensor is in shard r mod S)", path);
		if (refuse_f8(path) < 0)
			exit(EXIT_TROUBLE);
		if (scar_array_load(path, &st, &e) < 0) {
			warn_err(path, &e);
			exit(EXIT_TROUBLE);
		}
		st->shards = (uint32_t)shards;
		return st;
	}
	if (scar_ckpt_load(path, &st, &e) < 0) {
		warn_err(path, &e);
		exit(EXIT_TROUBLE);
	}
	if (shards && shards != st->shards)
		cli_usage_error("option '--shards': %llu is not the checkpoint's %u",
				(unsigned long long)shards, (unsigned)st->shards);
	return st;
}

/*
 * scar-train's checkpoint record (scar-events(7)), flushed: nothing when
 * none was written. 0, or EXIT_TROUBLE (said, unless the reader is gone).
 */
static int print_event(const struct scar_train_opts *o, uint64_t iter,
			const struct scar_store_policy_result *res)
{
	json_t *rec;

	if (!res->wrote)
		return 0;
	rec = json_pack("{s:s, s:I, s:I, s:s, s:s, s:I, s:I}", "type", "checkpoint",
			"iter", (json_int_t)iter, "state_iter", (json_int_t)iter,
			"policy", res->full && o->policy != SCAR_POLICY_FULL ? "full" :
				scar_policy_name(o->policy),
			"kind", res->full ? "full" : "partial", "rows", (json_int_t)res->rows,
			"bytes", (json_int_t)res->file_bytes);
	if (!rec || json_dumpf(rec, stdout, JSON_COMPACT) < 0 || putchar('\n') == EOF ||
	    fflush(stdout) == EOF) {
		/* the reader gone is said by nobody, as everywhere */
		if (errno != EPIPE)
			cli_warn("cannot write the event: %s", strerror(errno));
		json_decref(rec);
		return EXIT_TROUBLE;
	}
	json_decref(rec);
	return 0;
}

/*
 * The iteration of a stream's snapshot: its __metadata__ "scar.iteration"
 * (as scar-ckpt export writes it), else the one before it plus one (the
 * first: --iteration). 0, or EXIT_TROUBLE said.
 */
static int stream_iteration(const struct scar_array_stream *in, const char *path,
			    const struct scar_state *st, uint64_t given, uint64_t prev, int first,
			    uint64_t *iter)
{
	const char *m = json_string_value(json_object_get(json_object_get(st->extra, "safetensors"),
							  "scar.iteration"));
	unsigned long long n = scar_array_stream_count(in), at = scar_array_stream_start(in);
	unsigned long long v;
	char *end;

	if (m) {
		errno = 0;
		v = strtoull(m, &end, 10);
		if (*m < '0' || *m > '9' || *end || errno || v > INT64_MAX) {
			cli_warn("'%s': snapshot %llu (from byte %llu): __metadata__ scar.iteration '%s' is not an iteration",
				 path, n, at, m);
			return EXIT_TROUBLE;
		}
		if (first && given != UINT64_MAX && v != given) {
			cli_warn("'%s': snapshot 1: its __metadata__ scar.iteration %llu is not --iteration %llu",
				 path, v, (unsigned long long)given);
			return EXIT_TROUBLE;
		}
		*iter = v;
	} else if (first) {
		if (given == UINT64_MAX) {
			cli_warn("'%s': snapshot 1 has no __metadata__ scar.iteration: give the first "
				 "snapshot's iteration with --iteration N", path);
			return EXIT_TROUBLE;
		}
		*iter = given;
	} else {
		*iter = prev + 1;
	}
	if (!first && *iter <= prev) {
		cli_warn("'%s': snapshot %llu (from byte %llu): iteration %llu is not after the previous snapshot's, %llu",
			 path, n, at, (unsigned long long)*iter, (unsigned long long)prev);
		return EXIT_TROUBLE;
	}
	return 0;
}

/* --stream: every snapshot of path into the store, the lock held throughout. */
static int save_stream(const char *path, const char *dir, struct scar_train_opts *o,
		       uint64_t given, uint64_t shards, int force, int sync, unsigned threads)
{
	struct scar_store store;
	struct scar_store_policy *p = NULL;
	struct scar_array_stream *in = NULL;
	struct scar_store_policy_result res;
	struct scar_state *st = NULL;
	struct scar_error e;
	uint64_t iter = 0;
	int fd, rc = EXIT_TROUBLE, got, first = 1;

	scar_error_clear(&e);
	if (!shards)
		cli_usage_error("--stream needs --shards S: its snapshots have no shard count "
				"(row r of a tensor is in shard r mod S)");
	if (cli_is_stdio(path)) {
		cli_refuse_tty_stdin();
		fd = STDIN_FILENO;
		path = "-";
	} else if ((fd = scar_open_input(path, SCAR_OPEN_REGULAR, &e)) < 0) {
		/* a FIFO by name would read as empty before its writer opens it: take it on stdin */
		warn_err(path, &e);
		return EXIT_TROUBLE;
	}
	if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
		cli_warn("cannot create '%s': %s", dir, strerror(errno));
		goto out;
	}
	scar_store_init(&store, dir);
	if (scar_array_stream_open(&in, fd, path, scar_ckpt_memory_limit(), &e) < 0) {
		warn_err(path, &e);
		goto out;
	}
	if (scar_store_lock(&store, &e) < 0 ||
	    scar_store_policy_open(&p, &store, o, force, sync, threads, &e) < 0) {
		warn_err(dir, &e);
		goto unlock;
	}
	while ((got = scar_array_stream_next(in, &st, &e)) > 0) {
		st->shards = (uint32_t)shards;
		if (stream_iteration(in, path, st, given, iter, first, &iter))
			goto unlock;
		first = 0;
		st->iteration = iter;
		if (scar_store_policy_put(p, st, &res, &e) < 0) {
			/* say which snapshot of the stream the directory refused */
			cli_warn("'%s': snapshot %llu of '%s' (from byte %llu, iteration %llu): %s",
				 e.file[0] ? e.file : dir,
				 (unsigned long long)scar_array_stream_count(in), path,
				 (unsigned long long)scar_array_stream_start(in),
				 (unsigned long long)iter, e.msg);
			goto unlock;
		}
		if (print_event(o, iter, &res))
			goto unlock;
		scar_state_free(st);
		st = NULL;
	}
	if (got < 0) {
		warn_err(path, &e);
		goto unlock;
	}
	rc = 0;
unlock:
	scar_store_policy_close(p);
	scar_store_unlock(&store);
out:
	scar_state_free(st);
	scar_array_stream_close(in);
	if (fd != STDIN_FILENO)
		close(fd);
	return rc;
}

int cmd_save(int argc, char **argv)
{
	struct scar_train_opts o;
	struct scar_store_policy_result res;
	struct scar_store store;
	struct scar_state *st;
	struct scar_error e;
	uint64_t iter = UINT64_MAX, shards = 0, threads = cli_default_threads();
	int c, force = 0, sync = 1, policy_given = 0, stream = 0, is_array, rc;
	const char *dir;

	scar_train_opts_init(&o);
	o.fraction = 0.25;
	o.fail_seed = 1;
	while ((c = cli_command_getopt(argc, argv, ":h", save_opts)) != -1) {
		switch (c) {
		case OPT_POLICY:
			if ((rc = scar_policy_parse(optarg)) < 0 || rc == SCAR_POLICY_NONE)
				cli_usage_error("option '--policy': '%s' is not full, round-robin, random or priority",
						optarg);
			o.policy = (enum scar_policy)rc;
			policy_given = 1;
			break;
		case OPT_INTERVAL: o.interval = cli_parse_u64("--interval", optarg, 1, UINT32_MAX); break;
		case OPT_FRACTION: o.fraction = cli_parse_fraction("--fraction", optarg); break;
		case OPT_ITERATION: iter = cli_parse_u64("--iteration", optarg, 0, INT64_MAX); break;
		case OPT_SEED: o.fail_seed = cli_parse_u64("--seed", optarg, 0, UINT64_MAX); break;
		case OPT_SHARDS: shards = cli_parse_u64("--shards", optarg, 1, SCAR_MAX_SHARDS); break;
		case OPT_FORCE: force = 1; break;
		case OPT_NO_SYNC: sync = 0; break;
		case OPT_SHUFFLE: o.ckpt_shuffle = cli_parse_shuffle("--shuffle", optarg); break;
		case OPT_STREAM: stream = 1; break;
		case OPT_THREADS: threads = cli_parse_u64("--threads", optarg, 1, CLI_THREADS_MAX); break;
		}
	}
	if (!policy_given)
		cli_usage_error("save needs --policy (full, round-robin, random or priority)");
	if (o.policy == SCAR_POLICY_FULL)
		o.fraction = 1;
	if (argc - optind != 2)
		cli_usage_error("save needs SNAPSHOT and DIR");
	dir = argv[optind + 1];
	if (stream)
		return save_stream(argv[optind], dir, &o, iter, shards, force, sync,
				   (unsigned)threads);
	scar_error_clear(&e);
	st = load_snapshot(argv[optind], shards, &is_array);
	if (iter == UINT64_MAX) {
		if (is_array)
			cli_usage_error("'%s' is a snapshot: give its iteration with --iteration N", argv[optind]);
		iter = st->iteration;
	}
	st->iteration = iter;
	if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
		cli_warn("cannot create '%s': %s", dir, strerror(errno));
		scar_state_free(st);
		return EXIT_TROUBLE;
	}
	scar_store_init(&store, dir);
	if (scar_store_lock(&store, &e) < 0 ||
	    scar_store_policy_checkpoint(&store, &o, st, force, sync,
					 (unsigned)threads, &res, &e) < 0) {
		scar_store_unlock(&store);
		warn_err(dir, &e);
		scar_state_free(st);
		return EXIT_TROUBLE;
	}
	scar_store_unlock(&store);
	rc = print_event(&o, iter, &res);
	scar_state_free(st);
	return rc;
}
