/*
 * options.h - one parser per option grammar that several scar tools share,
 * so that the same value means the same thing, and is refused with the same
 * message, in every tool. Each refuses a bad value as a usage error
 * (cli_usage_error: exit 2) naming the option and the offending value.
 *
 *   row range    A:B     rows A to B-1; A may be left out (row 0), B too
 *                        (the tensor's last row); B <= A is an empty range
 *   shard        N       an integer in [0, SCAR_MAX_SHARDS - 1]
 *   shard list   0,3,5-7 shards and inclusive ranges A-B, comma-separated;
 *                        no empty item, A <= B; checked against the shard
 *                        count where it is known
 *   fraction     F       in (0, 1], as a decimal or a/b; a whole number N
 *                        above 1 is refused with "did you mean 1/N?"
 *   probability  P       in [0, 1], as a decimal
 *   integer list 3,7,9   comma-separated integers in [min, max]
 *   shuffle      WHEN    off, on or auto (scar/ckpt.h, enum scar_shuffle)
 */
#ifndef SCAR_CLI_OPTIONS_H
#define SCAR_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

/* A:B into [*lo, *hi); an open end gives 0 or UINT64_MAX. */
void cli_parse_rows(const char *opt, const char *s, uint64_t *lo, uint64_t *hi);

uint32_t cli_parse_shard(const char *opt, const char *s);

struct cli_shard_list {
	size_t n;
	uint32_t (*range)[2];	/* inclusive: range[i][0] <= range[i][1] */
};

/* Parse s into l (freeing what l held): syntax only, before any input is read. */
void cli_parse_shard_list(const char *opt, const char *s, struct cli_shard_list *l);
/*
 * Against S shards: a usage error naming opt for a shard >= S; else the
 * shards, ascending and once each, into out[cap] (a usage error when more
 * than cap); returns their count.
 */
size_t cli_shard_list_expand(const char *opt, const struct cli_shard_list *l, uint32_t S,
			     uint32_t *out, size_t cap);
void cli_shard_list_free(struct cli_shard_list *l);

double cli_parse_fraction(const char *opt, const char *s);
double cli_parse_probability(const char *opt, const char *s);

/* Into v[cap]; returns the count (at least one). */
size_t cli_parse_u64_list(const char *opt, const char *s, uint64_t *v, size_t cap,
			  uint64_t min, uint64_t max);

/* An enum scar_shuffle. */
int cli_parse_shuffle(const char *opt, const char *s);

#endif
