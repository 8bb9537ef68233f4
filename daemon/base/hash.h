/* SPDX-License-Identifier: MIT */
/* The string hash of the daemon's tables (FNV-1a, 64 bits). */
#ifndef RDMAD_HASH_H
#define RDMAD_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline size_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return (size_t)h;
}

#endif
