/* info.c - scar-ckpt info: metadata, the tensor table and section sizes (see scar-ckpt(1)). */
#include "ckpt.h"

/* info on a manifest: the combined state, and the rank files it is made of. */
static int info_manifest(const char *path, int json)
{
	struct scar_dist_manifest *m = NULL;
	struct scar_state *st = NULL;
	struct scar_error e;
	size_t i;

	scar_error_clear(&e);
	if (scar_dist_manifest_read(path, &m, &e) < 0 ||
	    scar_dist_manifest_load(path, &st, &e) < 0) {
		warn_err(path, &e);
		scar_dist_manifest_free(m);
		return EXIT_TROUBLE;
	}
	if (json) {
		json_t *o = json_object(), *ts = json_array(), *fs = json_array();

		if (!o || !ts || !fs)
			cli_die("out of memory");
		for (i = 0; i < st->ntensors; i++) {
			const struct scar_tensor *t = st->tensors[i];
			json_t *jt = json_object();

			json_put(jt, "name", scar_json_text(t->name));
			json_put(jt, "dtype", json_string(scar_dtype_name(t->dtype) ? scar_dtype_name(t->dtype) : "?"));
			json_put(jt, "role", json_string(scar_role_name(t->role) ? scar_role_name(t->role) : "?"));
			json_put(jt, "shape", shape_json(t->ndim, t->shape));
			json_put(jt, "rows", json_integer((json_int_t)scar_tensor_rows(t)));
			json_put(jt, "rows_present", json_integer((json_int_t)scar_tensor_rows_present(t)));
			json_array_append_new(ts, jt);
		}
		for (i = 0; i < m->nfiles; i++) {
			json_t *jf = json_object();
			char *fp = beside(path, m->files[i].name);

			json_put(jf, "rank", json_integer(m->files[i].rank));
			json_put(jf, "path", scar_json_text(fp));
			json_put(jf, "size", json_integer((json_int_t)m->files[i].size));
			json_put(jf, "crc32c", json_integer((json_int_t)m->files[i].crc32c));
			json_array_append_new(fs, jf);
			free(fp);
		}
		json_put(o, "file", scar_json_text(path));
		json_put(o, "distributed", json_true());
		json_put(o, "model", scar_json_text(st->model));
		json_put(o, "iteration", json_integer((json_int_t)st->iteration));
		json_put(o, "clock", json_integer((json_int_t)m->clock));
		json_put(o, "kind", scar_json_text(kind_name(m->partial)));
		json_put(o, "shards", json_integer(st->shards));
		json_put(o, "ranks", json_integer(m->ranks));
		json_put(o, "config", st->config ? json_deep_copy(st->config) : json_object());
		json_put(o, "extra", st->extra ? json_deep_copy(st->extra) : json_object());
		json_put(o, "tensors", ts);
		json_put(o, "files", fs);
		print_json(o);
		json_decref(o);
	} else {
		char shape[160], **qn = xmalloc((st->ntensors ? st->ntensors : 1) * sizeof(*qn)), *q;
		int w = 6;

		for (i = 0; i < st->ntensors; i++) {
			qn[i] = quoted(st->tensors[i]->name);
			if ((int)strlen(qn[i]) > w)
				w = (int)strlen(qn[i]);
		}
		q = quoted(path);
		printf("file:       %s\n", q);
		free(q);
		printf("format:     distributed (manifest of %zu rank files)\n", m->nfiles);
		q = quoted(st->model[0] ? st->model : "-");
		printf("model:      %s\n", q);
		free(q);
		printf("iteration:  %llu\n", (unsigned long long)st->iteration);
		printf("kind:       %s\n", kind_name(m->partial));
		printf("shards:     %u\n", st->shards);
		printf("ranks:      %u\n", m->ranks);
		print_json_quoted("config:", st->config);
		printf("tensors:    %zu\n\n", st->ntensors);
		printf("%-*s  %-5s  %-5s  %-16s  %13s\n", w, "tensor", "dtype", "role", "shape",
		       "present/rows");
		for (i = 0; i < st->ntensors; i++) {
			const struct scar_tensor *t = st->tensors[i];
			char pr[48];

			shape_text(shape, sizeof(shape), t->ndim, t->shape);
			snprintf(pr, sizeof(pr), "%llu/%llu",
				 (unsigned long long)scar_tensor_rows_present(t),
				 (unsigned long long)scar_tensor_rows(t));
			printf("%-*s  %-5s  %-5s  %-16s  %13s\n", w, qn[i],
			       scar_dtype_name(t->dtype) ? scar_dtype_name(t->dtype) : "?",
			       scar_role_name(t->role) ? scar_role_name(t->role) : "?", shape, pr);
			free(qn[i]);
		}
		free(qn);
		printf("\n%4s  %12s  %10s  %s\n", "rank", "bytes", "crc32c", "file");
		for (i = 0; i < m->nfiles; i++) {
			char *fp = beside(path, m->files[i].name);

			q = quoted(fp);
			printf("%4u  %12llu  %10lu  %s\n", m->files[i].rank,
			       (unsigned long long)m->files[i].size,
			       (unsigned long)m->files[i].crc32c, q);
			free(q);
			free(fp);
		}
	}
	scar_state_free(st);
	scar_dist_manifest_free(m);
	return 0;
}

/*
 * The human-readable description. Names come from the file: each is
 * quoted (a tensor called "\e[2J" must not clear the screen, nor one
 * holding "\n" forge a line); --json prints them exactly.
 */
static void info_text(const char *path, const struct scar_ckpt_info *in,
		      const struct scar_ckpt_section_info *secs, size_t nsec,
		      const uint64_t *traw, const uint64_t *tstored, uint64_t file_bytes)
{
	const json_t *extra = json_object_get(in->meta, "extra");
	uint64_t raw = 0, stored = 0;
	char shape[160], **qn = xmalloc((in->ntensors + 1) * sizeof(*qn)), *qp, *qm;
	int w = 6;
	size_t i;

	for (i = 0; i < in->ntensors; i++) {
		int l;

		qn[i] = quoted(in->tensors[i].name);
		l = (int)strlen(qn[i]);
		raw += traw[i];
		stored += tstored[i];
		if (l > w)
			w = l;
	}
	qp = quoted(path);
	qm = quoted(in->model[0] ? in->model : "-");
	printf("file:       %s\n", qp);
	printf("version:    %d.%d\n", in->version, in->minor);
	printf("model:      %s\n", qm);
	printf("iteration:  %llu\n", (unsigned long long)in->iteration);
	printf("kind:       %s\n", kind_name(in->partial));
	printf("shards:     %u\n", in->shards);
	print_json_quoted("config:", in->config);
	if (extra && json_object_size(extra))
		print_json_quoted("extra:", extra);
	printf("tensors:    %zu\n", in->ntensors);
	printf("sections:   %zu\n", nsec);
	printf("bytes:      %llu in file, %llu raw, %llu stored (ratio %.2f)\n\n",
	       (unsigned long long)file_bytes, (unsigned long long)raw,
	       (unsigned long long)stored, ratio(raw, stored));

	printf("%-*s  %-5s  %-5s  %-16s  %13s  %6s  %12s  %12s  %5s\n", w, "tensor", "dtype",
	       "role", "shape", "present/rows", "shards", "raw", "stored", "ratio");
	for (i = 0; i < in->ntensors; i++) {
		const struct scar_ckpt_tensor_info *t = &in->tensors[i];
		char pr[48];

		shape_text(shape, sizeof(shape), t->ndim, t->shape);
		snprintf(pr, sizeof(pr), "%llu/%llu", (unsigned long long)t->rows_present,
			 (unsigned long long)t->rows);
		printf("%-*s  %-5s  %-5s  %-16s  %13s  %6u  %12llu  %12llu  %5.2f\n", w, qn[i],
		       scar_dtype_name(t->dtype) ? scar_dtype_name(t->dtype) : "?",
		       scar_role_name(t->role) ? scar_role_name(t->role) : "?", shape, pr,
		       t->shards, (unsigned long long)traw[i], (unsigned long long)tstored[i],
		       ratio(traw[i], tstored[i]));
	}
	if (nsec)
		printf("\n%7s  %-*s  %5s  %10s  %12s  %12s  %12s  %5s  %s\n", "section", w, "tensor",
		       "shard", "rows", "offset", "raw", "stored", "ratio", "codec");
	for (i = 0; i < nsec; i++) {
		const struct scar_ckpt_section_info *s = &secs[i];
		const char *name = s->tensor < in->ntensors ? qn[s->tensor] : "?";

		printf("%7zu  %-*s  %5u  %10llu  %12llu  %12llu  %12llu  %5.2f  %s\n", i, w, name,
		       s->shard, (unsigned long long)s->nrows, (unsigned long long)s->offset,
		       (unsigned long long)s->raw_len, (unsigned long long)s->stored_len,
		       ratio(s->raw_len, s->stored_len),
		       s->shuffled ? "shuffle+lz4" : s->compressed ? "lz4" : "raw");
	}
	for (i = 0; i < in->ntensors; i++)
		free(qn[i]);
	free(qn);
	free(qp);
	free(qm);
}

static void info_json(const char *path, const struct scar_ckpt_info *in,
		      const struct scar_ckpt_section_info *secs, size_t nsec,
		      const uint64_t *traw, const uint64_t *tstored, uint64_t file_bytes)
{
	json_t *o = json_object(), *ts = json_array(), *ss = json_array();
	const json_t *extra = json_object_get(in->meta, "extra");
	uint64_t raw = 0, stored = 0;
	size_t i;

	if (!o || !ts || !ss)
		cli_die("out of memory");
	for (i = 0; i < in->ntensors; i++) {
		const struct scar_ckpt_tensor_info *t = &in->tensors[i];
		json_t *jt = json_object();

		raw += traw[i];
		stored += tstored[i];
		json_put(jt, "name", scar_json_text(t->name));
		json_put(jt, "dtype", json_string(scar_dtype_name(t->dtype) ? scar_dtype_name(t->dtype) : "?"));
		json_put(jt, "role", json_string(scar_role_name(t->role) ? scar_role_name(t->role) : "?"));
		json_put(jt, "shape", shape_json(t->ndim, t->shape));
		json_put(jt, "rows", json_integer((json_int_t)t->rows));
		json_put(jt, "rows_present", json_integer((json_int_t)t->rows_present));
		json_put(jt, "shards", json_integer(t->shards));
		json_put(jt, "raw_bytes", json_integer((json_int_t)traw[i]));
		json_put(jt, "stored_bytes", json_integer((json_int_t)tstored[i]));
		json_array_append_new(ts, jt);
	}
	for (i = 0; i < nsec; i++) {
		const struct scar_ckpt_section_info *s = &secs[i];
		json_t *js = json_object();

		json_put(js, "section", json_integer((json_int_t)i));
		json_put(js, "tensor", scar_json_text(s->tensor < in->ntensors ?
						   in->tensors[s->tensor].name : "?"));
		json_put(js, "shard", json_integer(s->shard));
		json_put(js, "rows", json_integer((json_int_t)s->nrows));
		json_put(js, "offset", json_integer((json_int_t)s->offset));
		json_put(js, "raw_bytes", json_integer((json_int_t)s->raw_len));
		json_put(js, "stored_bytes", json_integer((json_int_t)s->stored_len));
		json_put(js, "compressed", json_boolean(s->compressed));
		json_put(js, "shuffled", json_boolean(s->shuffled));
		json_array_append_new(ss, js);
	}
	json_put(o, "file", scar_json_text(path));
	json_put(o, "version", json_integer(in->version));
	json_put(o, "minor_version", json_integer(in->minor));
	json_put(o, "model", scar_json_text(in->model));
	json_put(o, "iteration", json_integer((json_int_t)in->iteration));
	json_put(o, "kind", scar_json_text(kind_name(in->partial)));
	json_put(o, "shards", json_integer(in->shards));
	json_put(o, "config", in->config ? json_deep_copy(in->config) : json_object());
	json_put(o, "extra", extra ? json_deep_copy(extra) : json_object());
	json_put(o, "file_bytes", json_integer((json_int_t)file_bytes));
	json_put(o, "raw_bytes", json_integer((json_int_t)raw));
	json_put(o, "stored_bytes", json_integer((json_int_t)stored));
	json_put(o, "tensors", ts);
	json_put(o, "sections", ss);
	print_json(o);
	json_decref(o);
}

int cmd_info(int argc, char **argv)
{
	struct scar_ckpt_section_info *secs = NULL;
	const struct scar_ckpt_info *in;
	struct scar_ckpt_reader *r = NULL;
	struct scar_ckpt_section sec;
	struct scar_error e;
	uint64_t *traw = NULL, *tstored = NULL, file_bytes, threads = cli_default_threads();
	size_t nsec = 0, cap = 0, i;
	const char *path;
	int json = 0, c, rc, status = 0, seekable;
	struct stat sb;

	while ((c = cli_command_getopt(argc, argv, ":h", info_opts)) != -1) {
		if (c == OPT_JSON)
			json = 1;
		else if (c == OPT_THREADS)
			threads = cli_parse_u64("--threads", optarg, 1, CLI_THREADS_MAX);
	}
	if (argc - optind > 1)
		cli_usage_error("too many operands");
	path = input_path(argv[optind]);
	if (strcmp(path, "-") != 0 && scar_dist_is_manifest(path))
		return info_manifest(path, json);

	/*
	 * info reports only what it has checked. A regular file is verified
	 * first (streaming, nothing kept) and then described from its index;
	 * a pipe is decoded section by section as it comes.
	 */
	seekable = strcmp(path, "-") != 0 && stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
	scar_error_clear(&e);
	if (seekable && scar_ckpt_verify_threads(path, (unsigned)threads, &e) < 0) {
		warn_err(path, &e);
		return EXIT_TROUBLE;
	}
	rc = scar_ckpt_reader_open(&r, path, &e);
	if (rc < 0) {
		warn_err(path, &e);
		return EXIT_TROUBLE;
	}
	in = scar_ckpt_reader_info(r);
	traw = calloc(in->ntensors + 1, sizeof(*traw));
	tstored = calloc(in->ntensors + 1, sizeof(*tstored));
	if (!traw || !tstored)
		cli_die("out of memory");
	if (seekable) {
		const struct scar_ckpt_section_info *idx;

		rc = scar_ckpt_reader_index(r, &idx, &e);
		if (rc >= 0) {
			nsec = (size_t)rc;
			secs = xmalloc(nsec * sizeof(*secs));
			memcpy(secs, idx, nsec * sizeof(*secs));
		}
		file_bytes = (uint64_t)sb.st_size;
	} else {
		while ((rc = scar_ckpt_reader_next(r, &sec, &e)) == 1) {
			if (nsec == cap) {
				cap = cap ? 2 * cap : 64;
				secs = xrealloc(secs, cap * sizeof(*secs));
			}
			secs[nsec++] = sec.info;
		}
		file_bytes = scar_ckpt_reader_offset(r);
	}
	for (i = 0; i < nsec; i++) {
		if (secs[i].tensor < in->ntensors) {
			traw[secs[i].tensor] += secs[i].raw_len;
			tstored[secs[i].tensor] += secs[i].stored_len;
		}
	}
	if (rc < 0) {
		warn_err(path, &e);
		status = EXIT_TROUBLE;
	} else if (json) {
		info_json(path, in, secs, nsec, traw, tstored, file_bytes);
	} else {
		info_text(path, in, secs, nsec, traw, tstored, file_bytes);
	}
	scar_ckpt_reader_close(r);
	free(secs);
	free(traw);
	free(tstored);
	return status;
}
