/* convert.c - scar-ckpt convert: rewrite a checkpoint (compression, precision, shards). */
#include "ckpt.h"

int cmd_convert(int argc, char **argv)
{
	struct scar_ckpt_save_opts so;
	struct scar_state *st = NULL;
	struct scar_error e;
	enum scar_dtype dtype = 0;
	uint64_t shards = 0, level = 0, threads = cli_default_threads();
	int c, compress = 1, sync = 1, have_level = 0, shuffle = -1, status;
	size_t i;
	const char *in, *out;

	while ((c = cli_command_getopt(argc, argv, ":h", convert_opts)) != -1) {
		switch (c) {
		case OPT_COMPRESS: compress = 1; break;
		case OPT_NO_COMPRESS: compress = 0; break;
		case OPT_DTYPE:
			dtype = parse_dtype_opt(optarg);
			if (!scar_dtype_is_float(dtype))
				cli_usage_error("option '--dtype': '%s' is not f32, f64, f16 or bf16",
						optarg);
			break;
		case OPT_LEVEL:
			level = cli_parse_u64("--level", optarg, 0, 12);
			have_level = 1;
			break;
		case OPT_NO_SYNC: sync = 0; break;
		case OPT_SHARDS: shards = cli_parse_u64("--shards", optarg, 1, SCAR_MAX_SHARDS); break;
		case OPT_SHUFFLE: shuffle = cli_parse_shuffle("--shuffle", optarg); break;
		case OPT_THREADS: threads = cli_parse_u64("--threads", optarg, 1, CLI_THREADS_MAX); break;
		}
	}
	if (argc - optind < 2)
		cli_usage_error("missing operand: convert needs IN and OUT");
	if (argc - optind > 2)
		cli_usage_error("too many operands");
	if (have_level && !compress)
		cli_usage_error("--level needs compression");
	if (shuffle > 0 && !compress)
		cli_usage_error("--shuffle %s needs compression", scar_shuffle_name(shuffle));
	in = input_path(argv[optind]);
	out = argv[optind + 1];
	refuse_tty_out(out);

	scar_error_clear(&e);
	if (load_any(in, &st, &e) < 0) {
		warn_err(in, &e);
		return EXIT_TROUBLE;
	}
	if (dtype)
		for (i = 0; i < st->ntensors; i++)
			if (scar_dtype_is_float(st->tensors[i]->dtype) &&
			    st->tensors[i]->dtype != dtype)
				convert_tensor(&st->tensors[i], dtype);
	if (shards)
		st->shards = (uint32_t)shards;
	scar_ckpt_save_opts_init(&so);
	so.compress = compress;
	if (have_level)
		so.level = (int)level;
	so.sync = sync;
	so.threads = (unsigned)threads;
	if (shuffle >= 0)
		so.shuffle = shuffle;
	status = save_state(st, out, &so);
	scar_state_free(st);
	return status;
}
