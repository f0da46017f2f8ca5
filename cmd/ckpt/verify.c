/* verify.c - scar-ckpt verify: structure and every checksum. */
#include "ckpt.h"

/* verify on a manifest: complete (sizes, CRCs), then every rank file in full. */
static int verify_manifest(const char *path, unsigned threads, struct scar_error *e)
{
	struct scar_dist_manifest *m = NULL;
	size_t i;
	int rc;

	rc = scar_dist_manifest_read(path, &m, e);
	if (rc < 0)
		return rc;
	rc = scar_dist_manifest_verify(path, m, e);
	/* A rank file that is missing leaves the checkpoint incomplete: damage, not trouble. */
	if (rc == SCAR_ENOTFOUND || (rc < 0 && e->code == SCAR_ENOTFOUND)) {
		e->code = SCAR_ECORRUPT;
		rc = SCAR_ECORRUPT;
	}
	for (i = 0; rc >= 0 && i < m->nfiles; i++) {
		char *fp = beside(path, m->files[i].name);

		rc = scar_ckpt_verify_threads(fp, threads, e);
		if (rc < 0 && !e->file[0])
			snprintf(e->file, sizeof(e->file), "%s", fp);
		free(fp);
	}
	scar_dist_manifest_free(m);
	return rc < 0 ? rc : 0;
}


int cmd_verify(int argc, char **argv)
{
	uint64_t threads = cli_default_threads();
	int quiet = 0, c, status = 0, i;

	while ((c = cli_command_getopt(argc, argv, ":hq", verify_opts)) != -1) {
		if (c == 'q')
			quiet = 1;
		else if (c == OPT_THREADS)
			threads = cli_parse_u64("--threads", optarg, 1, CLI_THREADS_MAX);
	}
	for (i = optind; i < argc || i == optind; i++) {
		const char *path = input_path(i < argc ? argv[i] : NULL);
		struct scar_error e;
		int rc;

		scar_error_clear(&e);
		if (strcmp(path, "-") != 0 && scar_dist_is_manifest(path))
			rc = verify_manifest(path, (unsigned)threads, &e);
		else
			rc = scar_ckpt_verify_threads(path, (unsigned)threads, &e);
		if (rc == 0) {
			if (!quiet) {
				/* A file named "a\nb.ckpt: ok" must not forge a second line. */
				scar_fputs_quoted(path, stdout);
				fputs(": ok\n", stdout);
			}
			continue;
		}
		warn_err(path, &e);
		if (scar_error_is_damage(rc)) {
			if (status < EXIT_NO)
				status = EXIT_NO;
		} else {
			status = EXIT_TROUBLE;
		}
		if (i >= argc)
			break;
	}
	return status;
}
