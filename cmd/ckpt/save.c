/*
 * save.c - scar-ckpt save: checkpoint another trainer's snapshot into a run
 * directory by a policy, as scar-train would (the work is
 * scar_store_policy_checkpoint, lib/ckpt_policy.c), and say so in one
 * scar-events checkpoint line on stdout.
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

int cmd_save(int argc, char **argv)
{
	struct scar_train_opts o;
	struct scar_store_policy_result res;
	struct scar_store store;
	struct scar_state *st;
	struct scar_error e;
	uint64_t iter = UINT64_MAX, shards = 0;
	int c, force = 0, sync = 1, policy_given = 0, is_array, rc;
	const char *dir;
	json_t *rec;

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
		}
	}
	if (!policy_given)
		cli_usage_error("save needs --policy (full, round-robin, random or priority)");
	if (o.policy == SCAR_POLICY_FULL)
		o.fraction = 1;
	if (argc - optind != 2)
		cli_usage_error("save needs SNAPSHOT and DIR");
	dir = argv[optind + 1];
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
	    scar_store_policy_checkpoint(&store, &o, st, force, sync, &res, &e) < 0) {
		scar_store_unlock(&store);
		warn_err(dir, &e);
		scar_state_free(st);
		return EXIT_TROUBLE;
	}
	scar_store_unlock(&store);
	if (res.wrote) {
		/* scar-train's checkpoint record (scar-events(7)) */
		rec = json_pack("{s:s, s:I, s:I, s:s, s:s, s:I, s:I}", "type", "checkpoint",
				"iter", (json_int_t)iter, "state_iter", (json_int_t)iter,
				"policy", res.full && o.policy != SCAR_POLICY_FULL ? "full" :
					scar_policy_name(o.policy),
				"kind", res.full ? "full" : "partial", "rows", (json_int_t)res.rows,
				"bytes", (json_int_t)res.file_bytes);
		if (!rec || json_dumpf(rec, stdout, JSON_COMPACT) < 0 || putchar('\n') == EOF ||
		    fflush(stdout) == EOF)
			cli_die("cannot write the event: %s", strerror(errno));
		json_decref(rec);
	}
	scar_state_free(st);
	return 0;
}
