/* data_uci.c - UCI bag-of-words corpora (docword.*.txt and vocab.*.txt). */
#include <stdlib.h>
#include <string.h>

#include "data_common.h"
#include "scar/data.h"

/* Header counts may exceed the file's lines (empty documents) by this much. */
#define UCI_SLACK (1u << 20)

struct uci_entry {
	uint32_t doc, word, count;
};

static int uci_header(struct scar_lines *lr, const char *what, uint64_t max, uint64_t *out,
		      struct scar_error *err)
{
	char *line, tok[48];
	size_t len;
	const char *p;
	int rc;

	rc = scar_lines_next(lr, &line, &len, err);
	if (rc < 0)
		return rc;
	if (rc == 0 && lr->line == 0)
		return scar_error_set_at(err, SCAR_EFORMAT, lr->path, 0, -1,
					 "empty file, expected the %s count", what);
	if (rc == 0)
		return scar_lines_fail(lr, err, SCAR_ETRUNC, "file ends before the %s count", what);
	p = scar_data_skip_blank(line);
	if (!(p = scar_data_parse_u64(p, UINT64_MAX, out)) || *scar_data_skip_blank(p)) {
		return scar_lines_fail(lr, err, SCAR_EFORMAT, "expected the %s count, got '%s'", what,
				       scar_data_token(scar_data_skip_blank(line), NULL, tok, sizeof(tok)));
	}
	if (*out > max)
		return scar_lines_fail(lr, err, SCAR_ECORRUPT,
				       "%s count %llu is more than a file of %llu bytes can hold", what,
				       (unsigned long long)*out, (unsigned long long)lr->size);
	return 0;
}

static int uci_vocab(const char *path, struct scar_corpus *c, struct scar_error *err)
{
	struct scar_lines lr;
	char *line;
	size_t len, cap = 0;
	uint64_t n = 0;
	int rc;

	rc = scar_lines_open(&lr, path, err);
	if (rc < 0)
		return rc;
	while ((rc = scar_lines_next(&lr, &line, &len, err)) > 0) {
		char *w;

		if (n == c->vocab) {
			rc = scar_lines_fail(&lr, err, SCAR_EMISMATCH,
					     "more than the %llu words the docword header declares",
					     (unsigned long long)c->vocab);
			goto out;
		}
		if (len == 0) {
			rc = scar_lines_fail(&lr, err, SCAR_EFORMAT, "empty word");
			goto out;
		}
		if ((rc = scar_data_reserve((void **)&c->vocab_words, &cap, n + 1,
					    sizeof(*c->vocab_words), err)) < 0)
			goto out;
		w = malloc(len + 1);
		if (!w) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory reading '%s'", path);
			goto out;
		}
		memcpy(w, line, len + 1);
		c->vocab_words[n++] = w;
	}
	if (rc < 0)
		goto out;
	if (n != c->vocab) {
		rc = scar_error_set_at(err, SCAR_EMISMATCH, path, -1, lr.line,
				       "%llu words, but the docword header declares %llu",
				       (unsigned long long)n, (unsigned long long)c->vocab);
		goto out;
	}
	rc = 0;
out:
	if (rc < 0 && c->vocab_words) {
		/* Not all c->vocab entries exist: free what was read here. */
		for (uint64_t i = 0; i < n; i++)
			free(c->vocab_words[i]);
		free(c->vocab_words);
		c->vocab_words = NULL;
	}
	scar_lines_close(&lr);
	return rc;
}

int scar_uci_bow_load(const char *docword, const char *vocab, struct scar_corpus **out,
		      struct scar_error *err)
{
	struct scar_lines lr;
	struct scar_corpus *c = NULL;
	struct uci_entry *e = NULL;
	uint64_t D, W, NNZ, k = 0, tokens = 0, idmax, *cur;
	char *line;
	size_t len, ecap = 0;
	int rc;

	*out = NULL;
	rc = scar_lines_open(&lr, docword, err);
	if (rc < 0)
		return rc;
	/*
	 * Counts are checked against the file size before anything is sized from
	 * them: the shortest entry line is "1 1 1\n", and documents or words
	 * without entries are allowed up to UCI_SLACK beyond the file's bytes.
	 */
	idmax = lr.size + UCI_SLACK < UINT32_MAX ? lr.size + UCI_SLACK : UINT32_MAX;
	if ((rc = uci_header(&lr, "document", idmax, &D, err)) < 0 ||
	    (rc = uci_header(&lr, "word", idmax, &W, err)) < 0 ||
	    (rc = uci_header(&lr, "nonzero", lr.size ? lr.size / 6 : UINT64_MAX, &NNZ, err)) < 0)
		goto out;
	c = calloc(1, sizeof(*c));
	if (!c || (rc = scar_data_reserve((void **)&e, &ecap, lr.size ? NNZ : 1, sizeof(*e), err)) < 0) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory reading '%s'", docword);
		goto out;
	}
	c->docs = D;
	c->vocab = W;
	while ((rc = scar_lines_next(&lr, &line, &len, err)) > 0) {
		const char *p = scar_data_skip_blank(line), *q;
		uint64_t d, w, n;

		if (*p == '\0')
			continue;
		if (k == NNZ) {
			rc = scar_lines_fail(&lr, err, SCAR_EMISMATCH,
					     "more than the %llu entries the header declares",
					     (unsigned long long)NNZ);
			goto out;
		}
		if (!(q = scar_data_parse_u64(p, UINT32_MAX, &d)) || (*q != ' ' && *q != '\t') ||
		    !(q = scar_data_parse_u64(scar_data_skip_blank(q), UINT32_MAX, &w)) ||
		    (*q != ' ' && *q != '\t') ||
		    !(q = scar_data_parse_u64(scar_data_skip_blank(q), UINT32_MAX, &n)) ||
		    *scar_data_skip_blank(q)) {
			rc = scar_lines_fail(&lr, err, SCAR_EFORMAT,
					     "expected 'docID wordID count', got '%.40s'", p);
			goto out;
		}
		if (d < 1 || d > D) {
			rc = scar_lines_fail(&lr, err, SCAR_ERANGE, "document id %llu not in 1..%llu",
					     (unsigned long long)d, (unsigned long long)D);
			goto out;
		}
		if (w < 1 || w > W) {
			rc = scar_lines_fail(&lr, err, SCAR_ERANGE, "word id %llu not in 1..%llu",
					     (unsigned long long)w, (unsigned long long)W);
			goto out;
		}
		if (n > SCAR_UCI_MAX_COUNT) {
			rc = scar_lines_fail(&lr, err, SCAR_ERANGE, "count %llu above the limit %u",
					     (unsigned long long)n, (unsigned)SCAR_UCI_MAX_COUNT);
			goto out;
		}
		if ((rc = scar_data_reserve((void **)&e, &ecap, k + 1, sizeof(*e), err)) < 0)
			goto out;
		e[k].doc = (uint32_t)(d - 1);
		e[k].word = (uint32_t)(w - 1);
		e[k].count = (uint32_t)n;
		tokens += n;
		k++;
	}
	if (rc < 0)
		goto out;
	if (k != NNZ) {
		rc = scar_error_set_at(err, SCAR_ETRUNC, docword, -1, lr.line,
				       "%llu entries, but the header declares %llu",
				       (unsigned long long)k, (unsigned long long)NNZ);
		goto out;
	}
	if (tokens > UINT32_MAX) {
		rc = scar_error_set_at(err, SCAR_ERANGE, docword, -1, -1,
				       "%llu tokens: more than this reader supports",
				       (unsigned long long)tokens);
		goto out;
	}
	/* A counting sort by document keeps each document's entries in file order. */
	c->doc_start = calloc((size_t)D + 2, sizeof(*c->doc_start));
	c->words = malloc((tokens ? tokens : 1) * sizeof(*c->words));
	if (!c->doc_start || !c->words) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory reading '%s'", docword);
		goto out;
	}
	for (uint64_t i = 0; i < NNZ; i++)
		c->doc_start[e[i].doc + 2] += e[i].count;
	for (uint64_t d = 2; d <= D + 1; d++)
		c->doc_start[d] += c->doc_start[d - 1];
	/* doc_start[d + 1] is now where doc d starts: use it as the fill cursor. */
	cur = c->doc_start + 1;
	for (uint64_t i = 0; i < NNZ; i++) {
		uint32_t *dst = c->words + cur[e[i].doc];

		for (uint32_t j = 0; j < e[i].count; j++)
			dst[j] = e[i].word;
		cur[e[i].doc] += e[i].count;
	}
	c->tokens = tokens;
	if (vocab && (rc = uci_vocab(vocab, c, err)) < 0)
		goto out;
	*out = c;
	c = NULL;
	rc = 0;
out:
	free(e);
	scar_corpus_free(c);
	scar_lines_close(&lr);
	return rc;
}
