/* import.c - scar-ckpt import: a new checkpoint of raw, .npy or safetensors arrays. */
#include <sys/mman.h>
#include <sys/stat.h>

#include "ckpt.h"

static void parse_shape(const char *s, int *ndim, uint64_t *shape)
{
	char buf[256], *tok, *save = NULL;

	if (strlen(s) >= sizeof(buf))
		cli_usage_error("option '--shape': '%s' is too long", s);
	strcpy(buf, s);
	*ndim = 0;
	if (strcmp(s, "scalar") == 0)
		return;
	cli_check_list("--shape", s, ",x");
	for (tok = strtok_r(buf, ",x", &save); tok; tok = strtok_r(NULL, ",x", &save)) {
		if (*ndim == SCAR_MAX_DIMS)
			cli_usage_error("option '--shape': more than %d dimensions", SCAR_MAX_DIMS);
		shape[(*ndim)++] = cli_parse_u64("--shape", tok, 0, UINT64_MAX >> 1);
	}
	if (*ndim == 0)
		cli_usage_error("option '--shape': '%s' has no dimensions", s);
}

static uint64_t elems_of(int ndim, const uint64_t *shape)
{
	uint64_t n = 1;
	int i;

	for (i = 0; i < ndim; i++) {
		if (shape[i] && n > UINT64_MAX / shape[i])
			return UINT64_MAX;
		n *= shape[i];
	}
	return n;
}

struct import_opts {
	enum scar_dtype dtype;
	int ndim;		/* -1 when --shape was not given */
	uint64_t shape[SCAR_MAX_DIMS];
	enum scar_role role;
};

/*
 * A tensor whose data points into a read-only mapping of its input file
 * while the checkpoint is written: no copy, and none of the page faults of
 * filling fresh memory. unmap_tensor puts the tensor's own buffer back.
 */
struct mapping {
	struct scar_tensor *t;
	void *own, *map;
	size_t len;
};

static void unmap_tensor(struct mapping *m)
{
	if (!m->map)
		return;
	m->t->data = m->own;
	munmap(m->map, m->len);
	m->map = NULL;
}

/*
 * One array from path: .npy (its header gives dtype and shape) or raw bytes
 * (--dtype and --shape). A regular file must hold exactly the bytes the
 * shape makes, by its size. A stream (stdin, a pipe, a device) is read up
 * to exactly those bytes and no further: more input is refused, not read,
 * so /dev/zero cannot run the tool out of memory.
 */
static struct scar_tensor *import_file(const char *path, const char *name,
				       const struct import_opts *io, struct mapping *m)
{
	const char *why = NULL, *declared;
	unsigned char head[10];
	enum scar_dtype dtype = io->dtype;
	uint64_t shape[SCAR_MAX_DIMS], n_el, want;
	struct scar_tensor *t = NULL;
	struct scar_error e;
	struct scar_array_info info;
	size_t bytes, fbytes, esize = 0, off = 0, pre = 0;
	unsigned char *dst;
	int fd, is_reg, npy = 0, swap = 0, ndim = io->ndim, rc = 0, stdin_in = strcmp(path, "-") == 0;
	ssize_t k;
	struct stat st;
	uint64_t fsize = 0;

	scar_error_clear(&e);
	memset(&info, 0, sizeof(info));
	/* Never waits on a FIFO without a writer: that reads as empty input. */
	fd = stdin_in ? STDIN_FILENO : scar_open_input(path, 0, &e);
	if (fd < 0) {
		warn_err(path, &e);
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		cli_warn("cannot read '%s': %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		cli_warn("cannot read '%s': %s", path, strerror(EISDIR));
		goto fail;
	}
	is_reg = S_ISREG(st.st_mode);
	fsize = (uint64_t)st.st_size;
	memcpy(shape, io->shape, sizeof(shape));
	/* An .npy file is what the library's sniffer says; anything else is raw. */
	if (!is_reg || fsize >= 10) {
		if ((k = scar_read_upto(fd, head, 10)) < 0) {
			rc = (int)k;
			goto ioerr;
		}
		if (is_reg && k < 10)
			goto shrank;
		pre = (size_t)k;
		npy = pre == 10 && scar_array_sniff(head, pre) == SCAR_ARRAY_NPY;
		if (!npy && is_reg) {
			if (lseek(fd, 0, SEEK_SET) != 0) {
				cli_warn("cannot read '%s': %s", path, strerror(errno));
				goto fail;
			}
			pre = 0;
		}
	}
	if (npy) {
		/* The header through the library's reader, which scar-diff's uses too. */
		pre = 0;
		if (scar_npy_header_read(fd, path, head, 10, is_reg ? fsize : UINT64_MAX, &info,
					 &e) < 0) {
			if (e.code == SCAR_EIO || e.code == SCAR_ENOMEM) {
				warn_err(path, &e);
				goto fail;
			}
			why = e.msg;
			goto bad;
		}
		off = (size_t)info.offset;
		ndim = info.ndim;
		memcpy(shape, info.shape, sizeof(shape));
		swap = info.swap;
		if (io->ndim >= 0 && (io->ndim != ndim ||
				      memcmp(io->shape, shape, (size_t)ndim * sizeof(*shape)))) {
			cli_warn("'%s': shape does not match --shape", path);
			goto fail;
		}
		/* The file's bytes: stored_size an element (2 for f16, widened to f32). */
		n_el = elems_of(ndim, shape);
		if (n_el == UINT64_MAX || n_el > UINT64_MAX / scar_dtype_size(info.dtype) ||
		    (is_reg && n_el * info.stored_size != fsize - off)) {
			why = "data length does not match the shape";
			goto bad;
		}
		dtype = info.dtype;
		esize = info.stored_size;
		declared = "its .npy header declares";
	} else {
		if (!dtype || io->ndim < 0) {
			cli_warn("raw input '%s' needs --dtype and --shape", path);
			goto fail;
		}
		n_el = elems_of(ndim, shape);
		if (n_el == UINT64_MAX || n_el > UINT64_MAX / scar_dtype_size(dtype) ||
		    (is_reg && n_el * scar_dtype_size(dtype) != fsize)) {
			cli_warn("'%s': %s bytes do not make a %s array of that shape (%llu bytes)",
				 path, is_reg ? "its" : "the", scar_dtype_name(dtype),
				 n_el == UINT64_MAX || n_el > UINT64_MAX / scar_dtype_size(dtype) ? 0ULL :
				 (unsigned long long)(n_el * scar_dtype_size(dtype)));
			goto fail;
		}
		esize = scar_dtype_size(dtype);
		declared = "--dtype and --shape make";
	}
	want = n_el * esize;
	if (scar_tensor_new(&t, name, dtype, io->role, ndim, shape, &e) < 0) {
		warn_err(path, &e);
		goto fail;
	}
	bytes = scar_tensor_bytes(t);
	/* The file's bytes go to the end of the tensor's, to be widened in place (f16). */
	fbytes = (size_t)want;
	dst = (unsigned char *)t->data + (bytes - fbytes);
	m->map = NULL;
	if (is_reg && !swap && !(npy && info.stored) && (!io->dtype || io->dtype == dtype) &&
	    bytes >= (1u << 20)) {
		/*
		 * Not MAP_POPULATE: mapping 1 GiB up front took 0.1-0.2 s before the
		 * first block; faulted in by the threads that gather the rows, it
		 * overlaps the writing. Read-ahead is asked for all the same.
		 */
		void *p = mmap(NULL, (size_t)fsize, PROT_READ, MAP_PRIVATE, fd, 0);

		if (p != MAP_FAILED) {
			(void)posix_madvise(p, (size_t)fsize, POSIX_MADV_WILLNEED);
			m->t = t;
			m->own = t->data;
			m->map = p;
			m->len = (size_t)fsize;
			t->data = (unsigned char *)p + off;
			goto done;
		}
	}
	if (is_reg) {
		rc = scar_read_full(fd, dst, fbytes);
		if (rc < 0)
			goto ioerr;
		if (rc == 0)
			goto shrank;
	} else {
		unsigned char extra;

		/*
		 * Exactly the bytes declared, then one more read to see that the
		 * stream ends. The tensor's pages are touched only as bytes arrive.
		 */
		if (pre > fbytes)
			goto toomuch;
		memcpy(dst, head, pre);
		if ((k = scar_read_upto(fd, dst + pre, fbytes - pre)) < 0) {
			rc = (int)k;
			goto ioerr;
		}
		if ((size_t)k < fbytes - pre) {
			cli_warn("'%s': input ends after %llu bytes of the %llu %s", path,
				 (unsigned long long)(pre + (size_t)k), (unsigned long long)want,
				 declared);
			goto fail;
		}
		if ((k = scar_read_upto(fd, &extra, 1)) < 0) {
			rc = (int)k;
			goto ioerr;
		}
		if (k)
			goto toomuch;
	}
	if (npy)
		scar_array_decode(&info, t->data, (size_t)n_el);
	if (io->dtype && io->dtype != dtype)
		convert_tensor(&t, io->dtype);
	goto done;
toomuch:
	cli_warn("'%s': more input than the %llu bytes %s", path, (unsigned long long)want,
		 declared);
	goto fail;
ioerr:
	cli_warn("cannot read '%s': %s", path, strerror(-rc));
	goto fail;
shrank:
	cli_warn("'%s': file shrank while reading", path);
	goto fail;
bad:
	cli_warn("'%s': not a valid .npy file: %s", path, why);
fail:
	scar_tensor_free(t);
	t = NULL;
done:
	if (!stdin_in)
		close(fd);
	return t;
}

/* The tensor name a file gives: its name without the extension; -1 when too long for buf. */
static int default_name(char *buf, size_t n, const char *path)
{
	const char *base = strrchr(path, '/'), *dot;
	int len;

	if (strcmp(path, "-") == 0) {
		snprintf(buf, n, "x");
		return 0;
	}
	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	if (dot && dot > base)
		len = snprintf(buf, n, "%.*s", (int)(dot - base), base);
	else
		len = snprintf(buf, n, "%s", base);
	return len < 0 || (size_t)len >= n ? -1 : 0;
}

/*
 * Every tensor of a safetensors file into st, by its name. Tensors the file
 * marks "scar.role.NAME": "state" (as our export does) keep that role; the
 * others take --role. Half-precision and small integer types are widened on
 * reading (see scar/arrayfile.h).
 */
/*
 * What scar-ckpt export wrote into __metadata__ (scar.model, scar.iteration,
 * scar.shards) becomes the checkpoint's, where no option set it: a whole
 * model round-trips. A value that is not what it says is refused.
 */
static int take_metadata(struct scar_state *st, const json_t *meta, const char *path,
			 unsigned given)
{
	const char *m = json_string_value(json_object_get(meta, "scar.model"));
	const char *it = json_string_value(json_object_get(meta, "scar.iteration"));
	const char *sh = json_string_value(json_object_get(meta, "scar.shards"));
	const char *cf = json_string_value(json_object_get(meta, "scar.config"));
	struct scar_error e;
	char *end;
	unsigned long long v;

	scar_error_clear(&e);
	if (m && !(given & 1)) {
		if (scar_name_check(m, "__metadata__ scar.model", 1, &e) < 0) {
			warn_err(path, &e);
			return -1;
		}
		snprintf(st->model, sizeof(st->model), "%s", m);
	}
	if (it && !(given & 2)) {
		errno = 0;
		v = strtoull(it, &end, 10);
		if (*it < '0' || *it > '9' || *end || errno || v > INT64_MAX) {
			cli_warn("'%s': __metadata__ scar.iteration '%s' is not an iteration", path, it);
			return -1;
		}
		st->iteration = v;
	}
	if (sh && !(given & 4)) {
		errno = 0;
		v = strtoull(sh, &end, 10);
		if (*sh < '0' || *sh > '9' || *end || errno || v < 1 || v > SCAR_MAX_SHARDS) {
			cli_warn("'%s': __metadata__ scar.shards '%s' is not a shard count", path, sh);
			return -1;
		}
		st->shards = (uint32_t)v;
	}
	if (cf) {
		json_error_t je;
		json_t *c = json_loads(cf, JSON_REJECT_DUPLICATES, &je);

		if (!json_is_object(c)) {
			json_decref(c);
			cli_warn("'%s': __metadata__ scar.config is not a JSON object", path);
			return -1;
		}
		json_decref(st->config);
		st->config = c;
	}
	return 0;
}

/*
 * The checkpoint format has no 8-bit float, and a tensor widened to f32
 * would come back from export as F32, four times the size: refused, by
 * name, before anything is read (import and save).
 */
int refuse_f8(const char *path)
{
	struct scar_arrayfile *f;
	struct scar_error e;
	int rc = 0;

	scar_error_clear(&e);
	if (scar_arrayfile_open(&f, path, &e) < 0) {
		warn_err(path, &e);
		return -1;
	}
	for (size_t i = 0; i < scar_arrayfile_count(f); i++) {
		const struct scar_array_info *t = scar_arrayfile_tensor(f, i);

		if (t->stored && !strncmp(t->stored, "f8", 2)) {
			cli_warn("'%s': tensor '%s' is %s: a checkpoint has no 8-bit float type "
				 "(scar-diff reads it; scar-inject restores its rows)", path, t->name,
				 !strcmp(t->stored, "f8_e4m3") ? "F8_E4M3" : "F8_E5M2");
			rc = -1;
			break;
		}
	}
	scar_arrayfile_close(f);
	return rc;
}

static int import_safetensors(struct scar_state *st, const char *path, const char *name,
			      enum scar_role role, unsigned given)
{
	struct scar_state *in = NULL;
	struct scar_error e;
	const json_t *meta;
	size_t k;
	int rc = 0;

	if (name)
		cli_usage_error("--name does not apply to a safetensors file or directory (tensors keep "
				"their names)");
	scar_error_clear(&e);
	if (refuse_f8(path) < 0)
		return -1;
	if (scar_array_load(path, &in, &e) < 0) {
		warn_err(path, &e);
		return -1;
	}
	meta = json_object_get(in->extra, "safetensors");
	if (take_metadata(st, meta, path, given) < 0) {
		scar_state_free(in);
		return -1;
	}
	for (k = 0; k < in->ntensors; k++) {
		struct scar_tensor *t = in->tensors[k];
		char key[SCAR_NAME_MAX + 16];
		const char *r;

		snprintf(key, sizeof(key), "scar.role.%s", t->name);
		r = json_string_value(json_object_get(meta, key));
		t->role = r && strcmp(r, "state") == 0 ? SCAR_ROLE_STATE : role;
		in->tensors[k] = NULL;
		if (scar_state_add(st, t, &e) < 0) {
			warn_err(path, &e);
			rc = -1;
			for (k++; k < in->ntensors; k++)
				scar_tensor_free(in->tensors[k]);
			break;
		}
	}
	in->ntensors = 0;
	scar_state_free(in);
	return rc;
}

int cmd_import(int argc, char **argv)
{
	struct import_opts io = { 0, -1, { 0 }, SCAR_ROLE_PARAM };
	struct scar_ckpt_save_opts so;
	const char *out = NULL, *name = NULL, *model = "";
	struct scar_state *st = NULL;
	struct mapping *maps = NULL;
	struct scar_error e;
	uint64_t iteration = 0, shards = 1, threads = cli_default_threads();
	unsigned given = 0;	/* options set: 1 --model, 2 --iteration, 4 --shards */
	int c, i, status = EXIT_TROUBLE, sync = 1, nmaps = 0, shuffle = SCAR_SHUFFLE_OFF;

	while ((c = cli_command_getopt(argc, argv, ":ho:", import_opts)) != -1) {
		switch (c) {
		case OPT_DTYPE: io.dtype = parse_dtype_opt(optarg); break;
		case OPT_THREADS: threads = cli_parse_u64("--threads", optarg, 1, CLI_THREADS_MAX); break;
		case OPT_ITERATION:
			iteration = cli_parse_u64("--iteration", optarg, 0, INT64_MAX);
			given |= 2;
			break;
		case OPT_MODEL:
			if (scar_name_check(optarg, "option '--model': model name", 1, &e) < 0)
				cli_usage_error("%s", e.msg);
			model = optarg;
			given |= 1;
			break;
		case OPT_NAME:
			if (scar_name_check(optarg, "option '--name': tensor name", 0, &e) < 0)
				cli_usage_error("%s", e.msg);
			name = optarg;
			break;
		case OPT_NO_SYNC: sync = 0; break;
		case OPT_SHUFFLE: shuffle = cli_parse_shuffle("--shuffle", optarg); break;
		case 'o': cli_check_path_arg("--output", optarg, "standard output"); out = optarg; break;
		case OPT_ROLE:
			io.role = scar_role_parse(optarg);
			if (!io.role)
				cli_usage_error("option '--role': '%s' is not param or state", optarg);
			break;
		case OPT_SHAPE: parse_shape(optarg, &io.ndim, io.shape); break;
		case OPT_SHARDS:
			shards = cli_parse_u64("--shards", optarg, 1, SCAR_MAX_SHARDS);
			given |= 4;
			break;
		}
	}
	if (!out)
		cli_usage_error("import needs -o OUT");
	if (optind == argc)
		cli_usage_error("missing operand: FILE");
	if (name && argc - optind > 1)
		cli_usage_error("--name needs a single FILE");
	refuse_tty_out(out);

	scar_error_clear(&e);
	if (scar_state_new(&st, model, &e) < 0)
		cli_die_error(&e);
	st->iteration = iteration;
	st->shards = (uint32_t)shards;
	maps = xmalloc((size_t)(argc - optind) * sizeof(*maps));
	for (i = optind; i < argc; i++) {
		const char *path = argv[i];
		struct scar_tensor *t;
		char nm[SCAR_NAME_MAX];

		if (strcmp(path, "-") == 0)
			cli_refuse_tty_stdin();
		/* a Hugging Face sharded directory, or its index named: read as one safetensors file */
		if (has_suffix(path, ".safetensors") || scar_array_is_sharded(path)) {
			if (io.dtype || io.ndim >= 0)
				cli_usage_error("--dtype and --shape do not apply to a safetensors file or "
						"directory (its tensors keep their dtypes and shapes; "
						"'scar-ckpt convert --dtype T' converts the checkpoint)");
			if (import_safetensors(st, path, name, io.role, given) < 0)
				goto out;
			continue;
		}
		scar_error_clear(&e);
		if (name) {
			snprintf(nm, sizeof(nm), "%s", name);
		} else if (default_name(nm, sizeof(nm), path) < 0 ||
			   scar_name_check(nm, "tensor name", 0, &e) < 0) {
			/* Not cut short: two long names could end up one. */
			cli_warn("'%s': %s; choose one with --name", path,
				 e.msg[0] ? e.msg : "the tensor name from the file name is too long");
			goto out;
		}
		t = import_file(path, nm, &io, &maps[nmaps]);
		if (!t)
			goto out;
		nmaps++;
		if (scar_state_add(st, t, &e) < 0) {
			warn_err(path, &e);
			goto out;
		}
	}
	scar_ckpt_save_opts_init(&so);
	so.sync = sync;
	so.threads = (unsigned)threads;
	so.shuffle = shuffle;
	status = save_state(st, out, &so);
out:
	for (i = 0; i < nmaps; i++)
		unmap_tensor(&maps[i]);
	free(maps);
	scar_state_free(st);
	return status;
}
