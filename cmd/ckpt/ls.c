/* ls.c - scar-ckpt ls: the checkpoints of a directory. */
#include <dirent.h>

#include "ckpt.h"

struct lsent {
	char *path;
	uint64_t iteration;
	int kind;		/* 0 full, 1 partial, 2 damaged, 3 distributed (a manifest) */
	uint64_t size;
	char *error;
	int owned;		/* path and error are ours to free (a manifest's entry) */
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct lsent *)a)->path, ((const struct lsent *)b)->path);
}

static int cmp_iter(const void *a, const void *b)
{
	const struct lsent *x = a, *y = b;

	if (x->iteration != y->iteration)
		return x->iteration < y->iteration ? -1 : 1;
	return cmp_name(a, b);
}

int cmd_ls(int argc, char **argv)
{
	static const char *const kinds[] = { "full", "partial", "damaged", "distributed" };
	struct scar_ckpt_entry *ents = NULL;
	struct lsent *v = NULL, *bad;
	struct scar_error e;
	size_t ne = 0, skipped = 0, nv = 0, nbad = 0, nmani = 0, i, j;
	const char *dir;
	char *dirbuf;
	int json = 0, c, status = 0;

	while ((c = cli_command_getopt(argc, argv, ":h", ls_opts)) != -1)
		if (c == OPT_JSON)
			json = 1;
	if (optind == argc)
		cli_usage_error("missing operand: DIR");
	if (argc - optind > 1)
		cli_usage_error("too many operands");
	dir = dirbuf = trim_dir(argv[optind]);

	scar_error_clear(&e);
	if (scar_ckpt_list_readable(dir, &ents, &ne, &skipped, &e) < 0) {
		warn_err(dir, &e);
		free(dirbuf);
		return EXIT_TROUBLE;
	}
	v = xmalloc((ne + 1) * sizeof(*v));
	for (i = 0; i < ne; i++) {
		if (scar_dist_is_rank_file(ents[i].path))
			continue;	/* a part of a distributed checkpoint: listed by its manifest */
		v[nv].path = ents[i].path;
		v[nv].iteration = ents[i].iteration;
		v[nv].kind = ents[i].partial ? 1 : 0;
		v[nv].size = ents[i].size;
		v[nv].error = NULL;
		v[nv].owned = 0;
		nv++;
	}
	{
		/* Distributed checkpoints: one entry per manifest, damaged when incomplete. */
		DIR *d = opendir(dir);
		struct dirent *de;
		size_t nm = 0;
		char **names = NULL;

		while (d && (de = readdir(d)) != NULL) {
			if (!scar_dist_is_manifest(de->d_name))
				continue;
			names = xrealloc(names, (nm + 1) * sizeof(*names));
			names[nm] = xmalloc(strlen(dir) + strlen(de->d_name) + 2);
			sprintf(names[nm], "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
				de->d_name);
			nm++;
		}
		if (d)
			closedir(d);
		for (i = 0; i < nm; i++) {
			struct scar_dist_manifest *m = NULL;
			struct stat sb;

			v = xrealloc(v, (nv + 1) * sizeof(*v));
			v[nv].path = names[i];
			v[nv].iteration = 0;
			v[nv].kind = 3;
			v[nv].size = 0;
			v[nv].error = NULL;
			v[nv].owned = 1;
			scar_error_clear(&e);
			/* What DIR holds: a FIFO or a link out of it is damage, never followed or waited on. */
			if (scar_dist_manifest_read_entry(names[i], &m, &e) == 0 &&
			    scar_dist_manifest_verify(names[i], m, &e) == 0) {
				size_t k;

				v[nv].iteration = m->iteration;
				v[nv].size = stat(names[i], &sb) == 0 ? (uint64_t)sb.st_size : 0;
				for (k = 0; k < m->nfiles; k++)
					v[nv].size += m->files[k].size;
			} else {
				v[nv].kind = 2;
				v[nv].size = stat(names[i], &sb) == 0 ? (uint64_t)sb.st_size : 0;
				v[nv].error = strdup(e.msg[0] ? e.msg : scar_strerror(e.code));
				cli_warn("damaged distributed checkpoint '%s': %s", names[i],
					 v[nv].error ? v[nv].error : "?");
				status = EXIT_NO;
			}
			scar_dist_manifest_free(m);
			nv++;
		}
		free(names);
		nmani = nm;
	}
	if (nmani)
		qsort(v, nv, sizeof(*v), cmp_iter);
	bad = v + nv;
	if (skipped) {
		/* The library skips what it cannot read; find those files and say why. */
		DIR *d = opendir(dir);
		struct dirent *de;

		if (!d) {
			cli_warn("cannot open '%s': %s", dir, strerror(errno));
			status = EXIT_TROUBLE;
			goto print;
		}
		while ((de = readdir(d)) != NULL) {
			size_t len = strlen(de->d_name);
			struct scar_ckpt_reader *r;
			struct stat sb;
			char *p;
			int known = 0, have_sb;

			if (len < 6 || strcmp(de->d_name + len - 5, ".ckpt") != 0)
				continue;
			for (j = 0; j < ne && !known; j++) {
				const char *s = strrchr(ents[j].path, '/');
				known = strcmp(s ? s + 1 : ents[j].path, de->d_name) == 0;
			}
			if (known)
				continue;
			p = xmalloc(strlen(dir) + len + 2);
			sprintf(p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", de->d_name);
			v = xrealloc(v, (nv + nbad + 1) * sizeof(*v));
			bad = v + nv;
			bad[nbad].path = p;
			bad[nbad].iteration = 0;
			bad[nbad].kind = 2;
			have_sb = stat(p, &sb) == 0;
			bad[nbad].size = have_sb ? (uint64_t)sb.st_size : 0;
			scar_error_clear(&e);
			if (have_sb && !S_ISREG(sb.st_mode)) {
				/* opening a FIFO would wait for a writer */
				snprintf(e.msg, sizeof(e.msg), "not a regular file");
			} else if (scar_ckpt_reader_open(&r, p, &e) == 0) {
				scar_ckpt_reader_close(r);
				snprintf(e.msg, sizeof(e.msg), "not a readable checkpoint");
			} else if (!e.msg[0]) {
				snprintf(e.msg, sizeof(e.msg), "%s", scar_strerror(e.code));
			}
			bad[nbad].error = strdup(e.msg);
			if (!e.file[0])
				snprintf(e.file, sizeof(e.file), "%s", p);
			if (e.code == SCAR_EIO) {
				/* unreadable is not damaged: a system error, exit 2 */
				warn_err(p, &e);
				status = EXIT_TROUBLE;
			} else {
				cli_warn("damaged checkpoint '%s': %s", p, e.msg);
			}
			nbad++;
		}
		closedir(d);
		qsort(bad, nbad, sizeof(*bad), cmp_name);
		if (nbad && status == 0)
			status = EXIT_NO;
	}
print:
	if (json) {
		json_t *o = json_object(), *a = json_array();

		if (!o || !a)
			cli_die("out of memory");
		for (i = 0; i < nv + nbad; i++) {
			json_t *x = json_object();

			json_put(x, "path", scar_json_text(v[i].path));
			json_put(x, "iteration", v[i].kind == 2 ? json_null() :
				 json_integer((json_int_t)v[i].iteration));
			json_put(x, "kind", scar_json_text(kinds[v[i].kind]));
			json_put(x, "size", json_integer((json_int_t)v[i].size));
			if (v[i].error)
				json_put(x, "error", scar_json_text(v[i].error));
			json_array_append_new(a, x);
		}
		json_put(o, "dir", scar_json_text(dir));
		json_put(o, "checkpoints", a);
		print_json(o);
		json_decref(o);
	} else {
		for (i = 0; i < nv + nbad; i++) {
			char *q = quoted(v[i].path);	/* a file name may hold anything */

			if (v[i].kind == 2)
				printf("%10s  %-7s  %12llu  %s\n", "-", kinds[2],
				       (unsigned long long)v[i].size, q);
			else
				printf("%10llu  %-7s  %12llu  %s\n", (unsigned long long)v[i].iteration,
				       kinds[v[i].kind], (unsigned long long)v[i].size, q);
			free(q);
		}
	}
	for (i = 0; i < nbad; i++) {
		free(bad[i].path);
		free(bad[i].error);
	}
	for (i = 0; i < nv; i++) {
		if (v[i].owned) {
			free(v[i].path);
			free(v[i].error);
		}
	}
	free(v);
	scar_ckpt_list_free(ents, ne);
	free(dirbuf);
	return status;
}
