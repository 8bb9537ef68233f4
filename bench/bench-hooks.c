/* SPDX-License-Identifier: MIT */
/*
 * What librdmad's hooks cost a program that links librdmad and makes no
 * registration cache (librdmad(3), "The hooks"): munmap() of a 4 KiB
 * page, and madvise(MADV_DONTNEED) of a written one, through the
 * program's own calls, which the dynamic linker binds to librdmad's
 * hooks, beside the same calls taken straight from libc (dlvsym() on
 * libc's handle).  The two take turns round by round, so that both see
 * the same load; each round's figure is the ratio of the two, and the
 * result the median of those ratios.  Beside them, libc's munmap() beside
 * itself: the noise of the method ("noise", 1.00 would be none).
 *
 *   bench-hooks [CALLS]
 * (CALLS a round, 2000 unless given) prints "figure NAME 4096 NS" and "ratio
 * NAME X" lines (bench/run-bench-mrcache.sh runs it here and in the guest).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench-util.h"
#include "rdmad.h"

#define ROUNDS 31

static int calls = 2000; /* a round's calls: the argument, if given */

typedef int munmap_fn(void *, size_t);
typedef int madvise_fn(void *, size_t, int);

/* The calls, each reached the same way (a pointer in this one line), so
 * that the two differ by librdmad's hook alone: libc's own, and this
 * program's, which the dynamic linker bound to librdmad's hooks. */
static struct {
	munmap_fn *munmap, *hooked_munmap;
	madvise_fn *madvise, *hooked_madvise;
	size_t ps;
	char *page; /* for madvise() */
} libc;

static char *map_page(void)
{
	char *p = mmap(NULL, libc.ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("bench-hooks: mmap");
		exit(1);
	}
	return p;
}

/* ns per munmap() of a fresh page, mapped and written untimed. */
static double unmap_with(munmap_fn *fn)
{
	uint64_t spent = 0, t0;
	char *p;
	int i;

	for (i = 0; i < calls; i++) {
		p = map_page();
		p[0] = 1;
		t0 = now_ns();
		fn(p, libc.ps);
		spent += now_ns() - t0;
	}
	return (double)spent / calls;
}

/* ns per madvise(MADV_DONTNEED) of a page written untimed. */
static double discard_with(madvise_fn *fn)
{
	uint64_t spent = 0, t0;
	int i;

	for (i = 0; i < calls; i++) {
		libc.page[0] = 1;
		t0 = now_ns();
		fn(libc.page, libc.ps, MADV_DONTNEED);
		spent += now_ns() - t0;
	}
	return (double)spent / calls;
}

static double hooked_munmap(void)
{
	return unmap_with(libc.hooked_munmap);
}

static double libc_munmap(void)
{
	return unmap_with(libc.munmap);
}

static double hooked_madvise(void)
{
	return discard_with(libc.hooked_madvise);
}

static double libc_madvise(void)
{
	return discard_with(libc.madvise);
}

static double median_of(double *v)
{
	qsort(v, ROUNDS, sizeof(v[0]), cmp_double);
	return v[ROUNDS / 2];
}

/* The hooked call beside libc's, taking turns: their figures and the
 * median ratio. */
static void beside(const char *name, double (*hooked)(void),
		   double (*plain)(void))
{
	double h[ROUNDS], p[ROUNDS], ratio[ROUNDS];
	char label[64];
	int i;

	/* Each first in every other round: neither gains from going first. */
	for (i = 0; i < ROUNDS; i++) {
		if (i % 2) {
			p[i] = plain();
			h[i] = hooked();
		} else {
			h[i] = hooked();
			p[i] = plain();
		}
		ratio[i] = h[i] / p[i];
	}
	if (hooked != plain) {
		snprintf(label, sizeof(label), "%s-hooked", name);
		printf("figure %s 4096 %.1f\n", label, median_of(h));
		snprintf(label, sizeof(label), "%s-libc", name);
		printf("figure %s 4096 %.1f\n", label, median_of(p));
	}
	printf("ratio %s %.4f\n", name, median_of(ratio));
}

int main(int argc, char **argv)
{
	void *handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

	if (argc > 1 && (calls = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: %s [CALLS]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	libc.ps = (size_t)sysconf(_SC_PAGESIZE);
	libc.munmap = handle ? (munmap_fn *)dlsym(handle, "munmap") : NULL;
	libc.madvise = handle ? (madvise_fn *)dlsym(handle, "madvise") : NULL;
	if (!libc.munmap || !libc.madvise) {
		fprintf(stderr, "bench-hooks: libc's calls: %s\n", dlerror());
		return 1;
	}
	/* librdmad linked, as by a program that uses it for anything else
	 * (this call keeps it linked), and no registration cache made. */
	if (rdmad_mr_cache_get_reason(NULL))
		return 1;
	libc.hooked_munmap = munmap;
	libc.hooked_madvise = madvise;
	if (libc.hooked_munmap == libc.munmap ||
	    libc.hooked_madvise == libc.madvise) {
		fprintf(stderr, "bench-hooks: this program's calls are "
				"libc's: librdmad's hooks are not bound\n");
		return 1;
	}
	libc.page = map_page();
	/* What the rounds' order and the load make of no difference at all:
	 * libc's munmap() beside itself. */
	beside("noise", libc_munmap, libc_munmap);
	beside("munmap", hooked_munmap, libc_munmap);
	beside("madvise", hooked_madvise, libc_madvise);
	return 0;
}
