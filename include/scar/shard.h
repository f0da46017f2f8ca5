/*
 * scar/shard.h - how the rows of a parameter tensor are split into shards.
 *
 * THE RULE (also in scar-ckpt(5)): with S shards, row r of every
 * SCAR_ROLE_PARAM tensor belongs to shard (r mod S). Shards are numbered
 * 0..S-1. Within a shard, rows are kept in ascending row order. This is the
 * row-hashing of a parameter server: losing one shard loses an evenly spread
 * 1/S of every tensor's rows rather than one contiguous block.
 *
 * State tensors (SCAR_ROLE_STATE) are not sharded: they form a single
 * section, shard 0, whatever S is.
 */
#ifndef SCAR_SHARD_H
#define SCAR_SHARD_H

#include <stdint.h>

#include "scar/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SCAR_MAX_SHARDS 65536u

/* Shard of row r among S shards (S >= 1). */
static inline uint32_t scar_shard_of_row(uint64_t r, uint32_t S)
{
	return (uint32_t)(r % S);
}

/* Number of rows of a tensor of `rows` rows that fall in shard s of S. */
static inline uint64_t scar_shard_rows(uint64_t rows, uint32_t s, uint32_t S)
{
	return rows > s ? (rows - s + S - 1) / S : 0;
}

/* The i-th row (0-based, ascending) of shard s of S. */
static inline uint64_t scar_shard_row(uint64_t i, uint32_t s, uint32_t S)
{
	return i * S + s;
}

/* Shard count that applies to tensor t in a state of S shards (1 for state tensors). */
static inline uint32_t scar_tensor_shards(const struct scar_tensor *t, uint32_t S)
{
	return t->role == SCAR_ROLE_PARAM ? S : 1;
}

#ifdef __cplusplus
}
#endif
#endif
