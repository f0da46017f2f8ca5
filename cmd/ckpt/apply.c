/* apply.c - scar-ckpt apply: partial checkpoints onto a full base, the saved view. */
#include "ckpt.h"

struct item {
	char *path;
	uint64_t iteration;
	int partial;
	size_t order;
	int from_dir;		/* an entry of a directory operand */
	struct scar_state *st;	/* already loaded: a stream can be read only once */
};

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->iteration != y->iteration)
		return x->iteration < y->iteration ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int peek(const char *path, struct item *it)
{
	struct scar_ckpt_reader *r;
	struct scar_error e;
	struct stat sb;

	scar_error_clear(&e);
	it->st = NULL;
	/* A FIFO or device opened again is another stream: load it now, whole. */
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		if (load_any(path, &it->st, &e) < 0) {
			warn_err(path, &e);
			return -1;
		}
		it->iteration = it->st->iteration;
		it->partial = 0;
		for (size_t k = 0; k < it->st->ntensors; k++)
			if (it->st->tensors[k]->present &&
			    scar_tensor_rows_present(it->st->tensors[k]) !=
			    scar_tensor_rows(it->st->tensors[k]))
				it->partial = 1;
		return 0;
	}
	if (scar_dist_is_manifest(path)) {
		struct scar_dist_manifest *m;

		if (scar_dist_manifest_read(path, &m, &e) < 0) {
			warn_err(path, &e);
			return -1;
		}
		it->iteration = m->iteration;
		it->partial = m->partial;
		scar_dist_manifest_free(m);
		return 0;
	}
	if (scar_ckpt_reader_open(&r, path, &e) < 0) {
		warn_err(path, &e);
		return -1;
	}
	it->iteration = scar_ckpt_reader_info(r)->iteration;
	it->partial = scar_ckpt_reader_info(r)->partial;
	scar_ckpt_reader_close(r);
	return 0;
}

int cmd_apply(int argc, char **argv)
{
	struct item *items = NULL, base_item;
	struct scar_ckpt_save_opts so;
	struct scar_state *base = NULL;
	struct scar_error e;
	const char *out = NULL;
	size_t n = 0, cap = 0, j, base_at = (size_t)-1, first_dir_end = 0;
	int c, i, rc, status = EXIT_TROUBLE, sync = 1, stdin_used = 0, moved = 0;
	uint64_t threads = cli_default_threads();
	int shuffle = SCAR_SHUFFLE_OFF;

	while ((c = cli_command_getopt(argc, argv, ":ho:", apply_opts)) != -1) {
		if (c == 'o')
			out = optarg;
		else if (c == OPT_NO_SYNC)
			sync = 0;
		else if (c == OPT_THREADS)
			threads = cli_parse_u64("--threads", optarg, 1, CLI_THREADS_MAX);
		else if (c == OPT_SHUFFLE)
			shuffle = cli_parse_shuffle("--shuffle", optarg);
	}
	if (optind == argc)
		cli_usage_error("missing operand: BASE");
	refuse_tty_out(out);

	for (i = optind; i < argc; i++) {
		struct stat sb;

		if (strcmp(argv[i], "-") == 0) {
			if (i != optind || stdin_used)
				cli_usage_error("only BASE may be '-'");
			cli_refuse_tty_stdin();
			stdin_used = 1;
		} else if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
			struct scar_ckpt_entry *ents;
			size_t ne, skipped = 0;
			char *dir = trim_dir(argv[i]);

			scar_error_clear(&e);
			/* Distributed checkpoints count once, as their manifests. */
			rc = scar_dist_ckpt_list(dir, &ents, &ne, &skipped, &e);
			free(dir);
			if (rc < 0) {
				warn_err(argv[i], &e);
				goto out;
			}
			if (skipped) {
				cli_warn("'%s': %zu damaged or unreadable checkpoints; see 'scar-ckpt ls'",
					 argv[i], skipped);
				scar_ckpt_list_free(ents, ne);
				goto out;
			}
			for (j = 0; j < ne; j++) {
				if (n == cap) {
					cap = cap ? 2 * cap : 16;
					items = xrealloc(items, cap * sizeof(*items));
				}
				items[n].path = strdup(ents[j].path);
				if (!items[n].path)
					cli_die("out of memory");
				items[n].iteration = ents[j].iteration;
				items[n].partial = ents[j].partial;
				items[n].order = n;
				items[n].from_dir = 1;
				items[n].st = NULL;
				n++;
			}
			scar_ckpt_list_free(ents, ne);
			if (i == optind) {
				first_dir_end = n;
				if (!ne) {
					cli_warn("no checkpoints in '%s'", argv[i]);
					goto out;
				}
			}
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			items = xrealloc(items, cap * sizeof(*items));
		}
		items[n].path = strdup(argv[i]);
		if (!items[n].path)
			cli_die("out of memory");
		items[n].order = n;
		items[n].from_dir = 0;
		items[n].st = NULL;
		/* stdin can only be read once: its iteration comes when it is loaded. */
		if (strcmp(argv[i], "-") == 0) {
			items[n].iteration = 0;
			items[n].partial = 0;
		} else if (peek(argv[i], &items[n]) < 0) {
			free(items[n].path);
			goto out;
		}
		n++;
	}

	/* The base: the first operand, or the oldest full checkpoint of its directory. */
	if (first_dir_end) {
		for (j = 0; j < first_dir_end; j++)
			if (!items[j].partial && (base_at == (size_t)-1 ||
						  items[j].iteration < items[base_at].iteration))
				base_at = j;
		if (base_at == (size_t)-1) {
			cli_warn("no full checkpoint in '%s' to start from", argv[optind]);
			goto out;
		}
	} else {
		base_at = 0;
	}
	base_item = items[base_at];
	items[base_at] = items[--n];
	moved = 1;
	scar_error_clear(&e);
	if (base_item.st) {
		base = base_item.st;
		base_item.st = NULL;
	} else if (load_any(base_item.path, &base, &e) < 0) {
		warn_err(base_item.path, &e);
		goto out;
	}
	for (j = 0; j < base->ntensors; j++) {
		if (base->tensors[j]->present &&
		    scar_tensor_rows_present(base->tensors[j]) != scar_tensor_rows(base->tensors[j])) {
			cli_warn("base '%s' is a partial checkpoint", base_item.path);
			goto out;
		}
	}
	base_item.iteration = base->iteration;
	qsort(items, n, sizeof(*items), cmp_item);

	for (j = 0; j < n; j++) {
		struct scar_state *over = NULL;

		if (items[j].iteration <= base_item.iteration) {
			if (items[j].from_dir)
				continue;	/* superseded by the full base */
			cli_warn("'%s' (iteration %llu) is not newer than the base '%s' (iteration %llu)",
				 items[j].path, (unsigned long long)items[j].iteration,
				 base_item.path, (unsigned long long)base_item.iteration);
			goto out;
		}
		scar_error_clear(&e);
		if (items[j].st) {
			over = items[j].st;
			items[j].st = NULL;
		} else if (load_any(items[j].path, &over, &e) < 0) {
			warn_err(items[j].path, &e);
			goto out;
		}
		if (scar_ckpt_apply(base, over, &e) < 0) {
			warn_err(items[j].path, &e);
			scar_state_free(over);
			goto out;
		}
		scar_state_free(over);
	}
	scar_ckpt_save_opts_init(&so);
	so.sync = sync;
	so.threads = (unsigned)threads;
	so.shuffle = shuffle;
	status = save_state(base, out ? out : "-", &so);
out:
	scar_state_free(base);
	for (j = 0; j < n; j++) {
		free(items[j].path);
		scar_state_free(items[j].st);
	}
	if (moved) {
		free(base_item.path);
		scar_state_free(base_item.st);
	}
	free(items);
	return status;
}
