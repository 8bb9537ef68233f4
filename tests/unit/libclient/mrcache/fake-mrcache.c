/* SPDX-License-Identifier: MIT */
/* Fake MRs for the registration cache's tests: fake-mrcache.h. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake-mrcache.h"

static size_t ps;

void fake_mrcache_init(void)
{
	ps = (size_t)sysconf(_SC_PAGESIZE);
}

static uint64_t next_token;

struct fake_mr {
	struct ibv_mr mr;
	size_t pages;
	uint64_t token[];
};

static char *page_start(const void *addr)
{
	return (char *)((uintptr_t)addr & ~(ps - 1));
}

/* The token of the page at @p, given one if it has none. */
static uint64_t token_of(char *p)
{
	uint64_t zero = 0, t = __atomic_add_fetch(&next_token, 1, 0);

	if (__atomic_compare_exchange_n((uint64_t *)p, &zero, t, false,
					__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return t;
	return zero;
}

/* As ibv_reg_mr(): a writable registration faults every page in for
 * writing and fails where it cannot (EFAULT). */
static struct ibv_mr *fake_reg(struct ibv_pd *pd, void *addr, size_t length,
			       int access)
{
	char *start = page_start(addr);
	size_t n = (page_start((char *)addr + length + ps - 1) - start) / ps;
	struct fake_mr *f;
	size_t i;

	(void)pd;
	if ((access & W) && madvise(start, n * ps, MADV_POPULATE_WRITE) < 0) {
		errno = EFAULT;
		return NULL;
	}
	f = calloc(1, sizeof(*f) + n * sizeof(f->token[0]));
	f->mr.addr = addr;
	f->mr.length = length;
	f->pages = n;
	for (i = 0; i < n && (access & W); i++)
		f->token[i] = token_of(start + i * ps);
	return &f->mr;
}

static int fake_dereg(struct ibv_mr *mr)
{
	free(mr);
	return 0;
}

const struct mrc_ops fake_mrcache_ops = {fake_reg, fake_dereg};

/* Every page of @mr still holds the token it had when registered. */
bool fake_mrcache_fresh(const struct ibv_mr *mr)
{
	const struct fake_mr *f = (const struct fake_mr *)mr;
	char *start = page_start(mr->addr);
	size_t i;

	for (i = 0; i < f->pages; i++)
		if (__atomic_load_n((uint64_t *)(start + i * ps),
				    __ATOMIC_SEQ_CST) != f->token[i])
			return false;
	return true;
}

struct rdmad_mr_cache *
fake_mrcache_new_attr(const struct rdmad_mr_cache_attr *attr)
{
	static struct ibv_pd pd;

	return mrc_cache_new_ops(&pd, attr, &fake_mrcache_ops, "fake0");
}

struct rdmad_mr_cache *fake_mrcache_new(size_t max_entries)
{
	struct rdmad_mr_cache_attr attr = {.max_entries = max_entries};

	return fake_mrcache_new_attr(&attr);
}

struct rdmad_mr_cache_stats fake_mrcache_stats(struct rdmad_mr_cache *c)
{
	struct rdmad_mr_cache_stats s;

	rdmad_mr_cache_get_stats(c, &s, sizeof(s));
	return s;
}

void *fake_mrcache_anon(void *at, size_t len, int flags)
{
	return mmap(at, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
}

/* Run @fn in a child with @seconds to finish: whether it exited 0. */
bool fake_mrcache_in_child(int (*fn)(void), unsigned int seconds,
			   const char *what)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		alarm(seconds);
		status = fn();
		fflush(stdout);
		_exit(status);
	}
	if (waitpid(pid, &status, 0) != pid)
		return false;
	if (WIFSIGNALED(status))
		fprintf(stderr, "%s: the child died of signal %d%s\n", what,
			WTERMSIG(status),
			WTERMSIG(status) == SIGALRM ? " (it hung)" : "");
	if (WIFEXITED(status) && WEXITSTATUS(status))
		fprintf(stderr, "%s: the child's check %d failed\n", what,
			WEXITSTATUS(status));
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int fake_mrcache_run_cases(const struct fake_mrcache_case *cases, size_t n,
			   int argc, char **argv)
{
	struct rdmad_mr_cache *probe;
	size_t i;

	fake_mrcache_init();
	probe = fake_mrcache_new(0);
	if (rdmad_mr_cache_is_caching(probe) != 1) {
		printf("SKIP: %s\n", rdmad_mr_cache_get_reason(probe));
		return 77;
	}
	rdmad_mr_cache_destroy(probe);
	for (i = 0; i < n; i++)
		if (argc < 2 || strstr(cases[i].name, argv[1]))
			cases[i].run();
	return 0;
}
