/* SPDX-License-Identifier: MIT */
/*
 * Fake MRs for libclient/mrcache/'s tests (test-mrcache-contract,
 * test-mrcache-hold, test-mrcache-reach): an MR knows which pages it
 * pinned.  Registering writes a token into each page that has none (a
 * zero page is a page no MR has seen) and the MR keeps the tokens; the
 * MR is fresh while every page it covers still holds its token, so a
 * page that was replaced, discarded, punched, truncated or copied and
 * written by a child reads zero or another token: what RDMA through a
 * real MR would show (tests/kernel/mrcache-app.c does it with rxe).  The
 * check reads the program's virtual address, never a frame number, so a
 * frame the kernel reuses cannot make a stale MR look fresh.
 */
#ifndef RDMAD_TEST_FAKE_MRCACHE_H
#define RDMAD_TEST_FAKE_MRCACHE_H

#include <stdbool.h>
#include <stddef.h>

#include <infiniband/verbs.h>

#include "mrcache/mrcache.h"

#define W IBV_ACCESS_LOCAL_WRITE

void fake_mrcache_init(void);
extern const struct mrc_ops fake_mrcache_ops;
/* Every page of @mr still holds the token it had when registered. */
bool fake_mrcache_fresh(const struct ibv_mr *mr);
/* A cache of fake MRs (at most @max_entries; 0: the default). */
struct rdmad_mr_cache *fake_mrcache_new(size_t max_entries);
struct rdmad_mr_cache *
fake_mrcache_new_attr(const struct rdmad_mr_cache_attr *attr);
struct rdmad_mr_cache_stats fake_mrcache_stats(struct rdmad_mr_cache *c);
/* Private anonymous memory, read and write. */
void *fake_mrcache_anon(void *at, size_t len, int flags);
/* Run @fn in a child with @seconds to finish: whether it exited 0. */
bool fake_mrcache_in_child(int (*fn)(void), unsigned int seconds,
			   const char *what);

/* A named case of a test, run alone where argv[1] is part of its name. */
struct fake_mrcache_case {
	const char *name;
	void (*run)(void);
};
/* A test's start: fake_mrcache_init(), then 77 (said on stdout) where the
 * hooks are not reached, else every case whose name holds argv[1] (all
 * without an argument) run, and 0; the caller returns its failures. */
int fake_mrcache_run_cases(const struct fake_mrcache_case *cases, size_t n,
			   int argc, char **argv);

#endif
