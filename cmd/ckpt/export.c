/* export.c - scar-ckpt export: a tensor's present rows as raw bytes, .npy, JSON or safetensors. */
#include "ckpt.h"

enum format { FMT_NONE, FMT_RAW, FMT_NPY, FMT_JSON, FMT_SAFETENSORS };

static enum format parse_format(const char *s)
{
	if (strcmp(s, "raw") == 0)
		return FMT_RAW;
	if (strcmp(s, "npy") == 0)
		return FMT_NPY;
	if (strcmp(s, "json") == 0)
		return FMT_JSON;
	if (strcmp(s, "safetensors") == 0)
		return FMT_SAFETENSORS;
	cli_usage_error("option '--format': '%s' is not raw, npy, json or safetensors", s);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Copy the selected rows of one decoded section into their places in out. */
static void place_rows(const struct scar_ckpt_section *sec, const uint64_t *sel, uint64_t nsel,
		       unsigned char *out, size_t rb, uint64_t *placed)
{
	const unsigned char *src = sec->data;
	uint64_t i;

	for (i = 0; i < sec->info.nrows; i++) {
		const uint64_t *hit = bsearch(&sec->rows[i], sel, nsel, sizeof(*sel), cmp_u64);

		if (hit) {
			/* A zero-width row has no bytes; its section's data may be NULL. */
			if (rb)
				memcpy(out + (size_t)(hit - sel) * rb, src + i * rb, rb);
			(*placed)++;
		}
	}
}

struct export_job {
	enum format fmt;
	struct scar_tensor view;
	const uint64_t *rows;
};

/* The exported rows in their format, through the library's writers. */
static int export_run(int fd, const char *name, void *ctx, struct scar_error *e)
{
	struct export_job *j = ctx;

	switch (j->fmt) {
	case FMT_NPY:
		return scar_npy_write_fd(fd, name, &j->view, 0, e);
	case FMT_JSON:
		return scar_json_rows_write_fd(fd, name, &j->view, j->rows, e);
	case FMT_SAFETENSORS: {
		struct scar_tensor *vp = &j->view;
		struct scar_state one;

		memset(&one, 0, sizeof(one));
		one.ntensors = 1;
		one.tensors = &vp;
		one.shards = 1;
		return scar_safetensors_write_fd(fd, name, &one, 0, NULL, e);
	}
	default:
		return scar_write_all(fd, j->view.data, scar_tensor_bytes(&j->view), name, e);
	}
}

/* The tensor names of a checkpoint, quoted, for a message: at most 8, then how many more. */
static void list_tensors(const struct scar_ckpt_info *in)
{
	size_t k;

	fputs("  its tensors:", stderr);
	for (k = 0; k < in->ntensors && k < 8; k++) {
		fputc(' ', stderr);
		scar_fputs_quoted(in->tensors[k].name, stderr);
	}
	if (k < in->ntensors)
		fprintf(stderr, " and %zu more (scar-ckpt info lists them)", in->ntensors - k);
	fputc('\n', stderr);
}

struct model_job {
	const struct scar_state *st;
	json_t *meta;
};

static int export_model_run(int fd, const char *name, void *ctx, struct scar_error *e)
{
	const struct model_job *j = ctx;

	return scar_safetensors_write_fd(fd, name, j->st, 0, j->meta, e);
}

/*
 * Every tensor of a full checkpoint to one safetensors file, names, dtypes
 * and roles kept (state tensors marked in __metadata__, which the import
 * reads back), with the model, iteration and shards in __metadata__.
 */
static int export_model(const char *path, const char *out_path)
{
	struct scar_state *st = NULL;
	struct model_job j = { NULL, NULL };
	struct scar_error e;
	char num[32];
	int status = EXIT_TROUBLE;

	scar_error_clear(&e);
	if (scar_ckpt_load(path, &st, &e) < 0) {
		warn_err(path, &e);
		return EXIT_TROUBLE;
	}
	for (size_t k = 0; k < st->ntensors; k++)
		if (st->tensors[k]->present) {
			cli_warn("'%s' is a partial checkpoint (tensor '%s' lacks rows): apply it over "
				 "its directory first (scar-ckpt apply), or export one tensor with --tensor",
				 path, st->tensors[k]->name);
			goto out;
		}
	j.st = st;
	j.meta = json_object();
	snprintf(num, sizeof(num), "%llu", (unsigned long long)st->iteration);
	if (!j.meta || json_object_set_new(j.meta, "scar.model", json_string(st->model)) ||
	    json_object_set_new(j.meta, "scar.iteration", json_string(num)))
		cli_die("out of memory");
	snprintf(num, sizeof(num), "%u", (unsigned)st->shards);
	if (json_object_set_new(j.meta, "scar.shards", json_string(num)))
		cli_die("out of memory");
	if (st->config && json_object_size(st->config)) {
		char *c = json_dumps(st->config, JSON_COMPACT | JSON_REAL_PRECISION(17));

		if (!c || json_object_set_new(j.meta, "scar.config", json_string(c)))
			cli_die("out of memory");
		free(c);
	}
	if (scar_file_replace(out_path, SCAR_REPLACE_SYNC, export_model_run, &j, &e) < 0) {
		warn_err(out_path ? out_path : "-", &e);
		goto out;
	}
	status = 0;
out:
	json_decref(j.meta);
	scar_state_free(st);
	return status;
}

int cmd_export(int argc, char **argv)
{
	const char *out_path = NULL, *tname = NULL, *path;
	const struct scar_ckpt_tensor_info *t = NULL;
	const struct scar_ckpt_info *in;
	struct scar_ckpt_reader *r = NULL;
	struct scar_ckpt_section sec;
	struct scar_error e;
	enum format fmt = FMT_NONE;
	uint64_t a = 0, b = UINT64_MAX, shard = UINT64_MAX, nsel = 0, placed = 0, i;
	int asked;
	uint64_t *sel = NULL, shape[SCAR_MAX_DIMS];
	unsigned char *buf = NULL;
	size_t k, rb, elem;
	int c, rc, status = EXIT_TROUBLE, ndim;
	uint32_t tk = 0, S;

	while ((c = cli_command_getopt(argc, argv, ":ho:", export_opts)) != -1) {
		switch (c) {
		case OPT_FORMAT: fmt = parse_format(optarg); break;
		case 'o': cli_check_path_arg("--output", optarg, "standard output"); out_path = optarg; break;
		case OPT_ROWS: cli_parse_rows("--rows", optarg, &a, &b); break;
		case OPT_SHARD: shard = cli_parse_shard("--shard", optarg); break;
		case OPT_TENSOR: tname = optarg; break;
		}
	}
	if (argc - optind > 1)
		cli_usage_error("too many operands");
	if (fmt == FMT_NONE)
		fmt = out_path && has_suffix(out_path, ".safetensors") ? FMT_SAFETENSORS :
		      out_path && has_suffix(out_path, ".npy") ? FMT_NPY :
		      out_path && has_suffix(out_path, ".json") ? FMT_JSON : FMT_RAW;
	if (fmt != FMT_JSON)
		refuse_tty_out(out_path);
	path = input_path(argv[optind]);

	scar_error_clear(&e);
	if (scar_ckpt_reader_open(&r, path, &e) < 0) {
		warn_err(path, &e);
		return EXIT_TROUBLE;
	}
	in = scar_ckpt_reader_info(r);
	/*
	 * No tensor named, safetensors and no row selection: the whole model,
	 * its metadata with it - several tensors, or one whose rows are all
	 * there (one tensor of a partial checkpoint exports its present rows).
	 */
	if (!tname && fmt == FMT_SAFETENSORS && !a && b == UINT64_MAX && shard == UINT64_MAX &&
	    (in->ntensors > 1 ||
	     (in->ntensors == 1 && !cli_is_stdio(path) &&
	      in->tensors[0].rows_present == in->tensors[0].rows))) {
		if (cli_is_stdio(path)) {
			cli_warn("exporting every tensor of '-' reads the checkpoint twice: give a file, or --tensor");
			goto out;
		}
		scar_ckpt_reader_close(r);
		return export_model(path, out_path);
	}
	for (k = 0; k < in->ntensors; k++)
		if (tname ? strcmp(in->tensors[k].name, tname) == 0 : in->ntensors == 1)
			break;
	if (k == in->ntensors) {
		if (tname) {
			const char **names = xmalloc((in->ntensors + 1) * sizeof(*names));
			size_t near;

			for (k = 0; k < in->ntensors; k++)
				names[k] = in->tensors[k].name;
			if ((near = scar_name_nearest(tname, names, in->ntensors)) < in->ntensors)
				cli_warn("no tensor '%s' in '%s'; did you mean '%s'?", tname, path, names[near]);
			else
				cli_warn("no tensor '%s' in '%s'", tname, path);
			free(names);
			list_tensors(in);
		} else {
			cli_warn("'%s' has %zu tensors: choose one with --tensor, or export them all "
				 "with --format safetensors", path, in->ntensors);
			list_tensors(in);
		}
		goto out;
	}
	t = &in->tensors[k];
	tk = (uint32_t)k;
	S = t->role == SCAR_ROLE_PARAM ? in->shards : 1;
	{
		/* The selection checks scar-inject makes, in the same place. */
		struct scar_select sl;

		scar_select_init(&sl);
		sl.shard = shard == UINT64_MAX ? -1 : (int64_t)shard;
		sl.row_lo = a;
		sl.row_hi = b;
		/* A tensor of 0 rows exports as an empty array unless rows are asked for. */
		if ((t->rows || a || b != UINT64_MAX || shard != UINT64_MAX) &&
		    scar_select_check_rows(t->name, t->rows, S, &sl, &e) < 0) {
			cli_warn("%s in '%s'", e.msg, path);
			goto out;
		}
	}
	asked = a || b != UINT64_MAX || shard != UINT64_MAX;
	if (b == UINT64_MAX)
		b = t->rows;

	/* The selected rows: present, in [a, b), in the shard; ascending. */
	for (k = 0; k < t->nranges; k++) {
		uint64_t lo = t->ranges[k][0], hi = lo + t->ranges[k][1];

		lo = lo > a ? lo : a;
		hi = hi < b ? hi : b;
		if (lo < hi)
			nsel += hi - lo;
	}
	sel = xmalloc((size_t)nsel * sizeof(*sel));
	nsel = 0;
	for (k = 0; k < t->nranges; k++) {
		uint64_t lo = t->ranges[k][0], hi = lo + t->ranges[k][1];

		lo = lo > a ? lo : a;
		hi = hi < b ? hi : b;
		for (i = lo; i < hi; i++)
			if (shard == UINT64_MAX || scar_shard_of_row(i, S) == shard)
				sel[nsel++] = i;
	}
	/* Rows asked for that this partial checkpoint lacks: an error, not "[]". */
	if (!nsel && asked && a < b) {
		cli_warn("no selected row of tensor '%s' is present in '%s' (a partial checkpoint "
			 "holding %llu of its %llu rows)", t->name, path,
			 (unsigned long long)t->rows_present,
			 (unsigned long long)t->rows);
		goto out;
	}
	elem = scar_dtype_size(t->dtype);
	rb = elem;
	for (k = 1; k < (size_t)t->ndim; k++)
		rb *= (size_t)t->shape[k];
	if (rb && nsel > SIZE_MAX / rb)
		cli_die("out of memory");
	buf = xmalloc((size_t)nsel * rb);

	if (nsel) {
		const struct scar_ckpt_section_info *idx;
		int n = scar_ckpt_reader_index(r, &idx, &e);

		if (n >= 0) {
			/* Seekable: decode only this tensor's sections. */
			for (k = 0; k < S; k++) {
				if (shard != UINT64_MAX && k != shard)
					continue;
				rc = scar_ckpt_reader_section(r, tk, (uint32_t)k, &sec, &e);
				if (rc == SCAR_ENOTFOUND)
					continue;
				if (rc < 0) {
					warn_err(path, &e);
					goto out;
				}
				place_rows(&sec, sel, nsel, buf, rb, &placed);
			}
		} else if (n == SCAR_EUNSUPPORTED) {
			scar_error_clear(&e);
			while ((rc = scar_ckpt_reader_next(r, &sec, &e)) == 1)
				if (sec.info.tensor == tk)
					place_rows(&sec, sel, nsel, buf, rb, &placed);
			if (rc < 0) {
				warn_err(path, &e);
				goto out;
			}
		} else {
			warn_err(path, &e);
			goto out;
		}
		if (placed != nsel) {
			cli_warn("'%s': tensor '%s': %llu of %llu rows missing from its sections",
				 path, t->name, (unsigned long long)(nsel - placed),
				 (unsigned long long)nsel);
			goto out;
		}
	}

	/* The exported array: nsel rows of the tensor's row shape (a scalar stays one). */
	ndim = t->ndim;
	memcpy(shape, t->shape, sizeof(shape));
	if (ndim == 0 && nsel != 1) {
		ndim = 1;
		shape[0] = nsel;
	} else if (ndim > 0) {
		shape[0] = nsel;
	}
	{
		/* The exported rows as a tensor of their own, borrowed from buf. */
		struct export_job j;
		char st_name[SCAR_NAME_MAX];

		memset(&j, 0, sizeof(j));
		snprintf(st_name, sizeof(st_name), "%s", t->name);
		j.fmt = fmt;
		j.rows = sel;
		j.view.name = st_name;
		j.view.dtype = t->dtype;
		j.view.role = t->role;
		j.view.ndim = ndim;
		memcpy(j.view.shape, shape, sizeof(j.view.shape));
		j.view.data = buf;
		j.view.present = NULL;
		scar_error_clear(&e);
		if (scar_file_replace(cli_is_stdio(out_path) ? "-" : out_path, SCAR_REPLACE_SYNC,
				      export_run, &j, &e) < 0) {
			warn_err(cli_is_stdio(out_path) ? "(stdout)" : out_path, &e);
			goto out;
		}
	}
	status = 0;
out:
	scar_ckpt_reader_close(r);
	free(sel);
	free(buf);
	return status;
}
