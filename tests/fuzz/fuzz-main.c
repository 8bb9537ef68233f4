/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libFuzzer's main(), so every fuzz target also builds
 * with gcc and runs as an ordinary meson test (suite 'fuzz'), with or
 * without ASan/UBSan.  It replays each seed file (directories are read
 * file by file), then feeds random and mutated inputs from a fixed seed
 * until a run or time limit.  It accepts the libFuzzer flags the tests
 * use: -runs=N, -max_total_time=SEC, -max_len=N, -seed=N.  A crash is
 * the failure signal, as with libFuzzer; the target aborts on a broken
 * invariant.  With -Dfuzzers=true the real libFuzzer replaces this file.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

struct input {
	uint8_t *data;
	size_t len;
};

/* The input being run, for the crash report. */
static const uint8_t *current;
static size_t current_len;

/* Print the input that crashed as hex, so it can become a seed.  Only
 * write(2) here: this runs in a signal handler. */
static void on_crash(int sig)
{
	static const char digits[] = "0123456789abcdef";
	char pair[2];
	size_t i;

	write(2, "fuzz: crashing input (hex): ", 28);
	for (i = 0; i < current_len; i++) {
		pair[0] = digits[current[i] >> 4];
		pair[1] = digits[current[i] & 15];
		write(2, pair, 2);
	}
	write(2, "\n", 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void run_one(const uint8_t *data, size_t len)
{
	current = data;
	current_len = len;
	LLVMFuzzerTestOneInput(data, len);
}

struct fuzz {
	struct input *seeds;
	size_t n_seeds;
	unsigned long long runs;
	double max_time;
	size_t max_len;
	uint64_t rng;
};

/* xorshift64*: deterministic for a given -seed on every machine. */
static uint64_t next_random(struct fuzz *fz)
{
	fz->rng ^= fz->rng >> 12;
	fz->rng ^= fz->rng << 25;
	fz->rng ^= fz->rng >> 27;
	return fz->rng * 2685821657736338717ULL;
}

static size_t below(struct fuzz *fz, size_t n)
{
	return n ? (size_t)(next_random(fz) % n) : 0;
}

static int add_seed(struct fuzz *fz, const char *path)
{
	struct input *seeds, in = {0};
	FILE *f = fopen(path, "rb");
	long len;

	if (!f)
		return -errno;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	in.data = malloc(len > 0 ? (size_t)len : 1);
	in.len =
		in.data ? fread(in.data, 1, (size_t)(len > 0 ? len : 0), f) : 0;
	fclose(f);
	seeds = realloc(fz->seeds, (fz->n_seeds + 1) * sizeof(*seeds));
	if (!in.data || !seeds) {
		free(in.data);
		return -ENOMEM;
	}
	fz->seeds = seeds;
	fz->seeds[fz->n_seeds++] = in;
	return 0;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of a directory in name order, so replays are reproducible. */
static int add_dir(struct fuzz *fz, const char *dir)
{
	char **names = NULL, path[4096];
	size_t n = 0, i;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), compare_names);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		add_seed(fz, path);
		free(names[i]);
	}
	free(names);
	return 0;
}

static int add_path(struct fuzz *fz, const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? add_dir(fz, path) : add_seed(fz, path);
}

static int parse_flag(struct fuzz *fz, const char *arg)
{
	if (!strncmp(arg, "-runs=", 6))
		fz->runs = strtoull(arg + 6, NULL, 0);
	else if (!strncmp(arg, "-max_total_time=", 16))
		fz->max_time = strtod(arg + 16, NULL);
	else if (!strncmp(arg, "-max_len=", 9))
		fz->max_len = strtoull(arg + 9, NULL, 0);
	else if (!strncmp(arg, "-seed=", 6))
		fz->rng = strtoull(arg + 6, NULL, 0) | 1;
	/* Other libFuzzer flags mean nothing here; ignore them. */
	return 0;
}

/* One mutation of @buf (capacity fz->max_len), libFuzzer-style. */
static size_t mutate(struct fuzz *fz, uint8_t *buf, size_t len)
{
	static const uint8_t interesting[] = {0x00, 0x01, 0x7f, 0x80, 0xff,
					      0x08, 0x0a, 0x10, 0x12, 0xaa};
	size_t pos = below(fz, len);

	switch (below(fz, 6)) {
	case 0: /* flip a bit */
		if (len)
			buf[pos] ^= (uint8_t)(1u << below(fz, 8));
		return len;
	case 1: /* a value protobuf parsers care about */
		if (len)
			buf[pos] = interesting[below(fz, sizeof(interesting))];
		return len;
	case 2: /* insert a byte */
		if (len >= fz->max_len)
			return len;
		memmove(buf + pos + 1, buf + pos, len - pos);
		buf[pos] = (uint8_t)next_random(fz);
		return len + 1;
	case 3: /* delete a byte */
		if (!len)
			return len;
		memmove(buf + pos, buf + pos + 1, len - pos - 1);
		return len - 1;
	case 4: /* truncate */
		return pos;
	}
	/* duplicate a run of bytes onto the end */
	if (len) {
		size_t run = 1 + below(fz, len - pos);

		if (len + run <= fz->max_len) {
			memcpy(buf + len, buf + pos, run);
			return len + run;
		}
	}
	return len;
}

static size_t make_input(struct fuzz *fz, uint8_t *buf)
{
	size_t len, i, n;

	if (!fz->n_seeds || below(fz, 8) == 0) {
		len = below(fz, fz->max_len + 1);
		for (i = 0; i < len; i++)
			buf[i] = (uint8_t)next_random(fz);
		return len;
	}
	const struct input *in = &fz->seeds[below(fz, fz->n_seeds)];

	len = in->len < fz->max_len ? in->len : fz->max_len;
	memcpy(buf, in->data, len);
	n = 1 + below(fz, 8);
	for (i = 0; i < n; i++)
		len = mutate(fz, buf, len);
	return len;
}

static double elapsed(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) +
	       (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static unsigned long long run_random(struct fuzz *fz)
{
	struct timespec start;
	unsigned long long i;
	uint8_t *buf = malloc(fz->max_len + 1);
	uint8_t *copy = malloc(fz->max_len + 1);
	size_t len;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (i = 0; i < fz->runs; i++) {
		if ((i & 255) == 0 && elapsed(&start) >= fz->max_time)
			break;
		len = make_input(fz, buf);
		/* A fresh exact-size copy lets ASan see reads past the end. */
		memcpy(copy, buf, len);
		uint8_t *exact = malloc(len ? len : 1);

		memcpy(exact, copy, len);
		run_one(exact, len);
		free(exact);
	}
	free(buf);
	free(copy);
	return i;
}

int main(int argc, char **argv)
{
	struct fuzz fz = {.runs = ~0ULL,
			  .max_time = 5,
			  .max_len = 4096,
			  .rng = 0x9e3779b97f4a7c15ULL};
	unsigned long long done;
	size_t i;
	int a;

	signal(SIGABRT, on_crash);
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (a = 1; a < argc; a++) {
		if (argv[a][0] == '-')
			parse_flag(&fz, argv[a]);
		else if (add_path(&fz, argv[a]) < 0)
			fprintf(stderr, "fuzz: cannot read %s\n", argv[a]);
	}
	for (i = 0; i < fz.n_seeds; i++)
		run_one(fz.seeds[i].data, fz.seeds[i].len);
	done = run_random(&fz);
	printf("fuzz: %zu seeds replayed, %llu generated inputs, no crash\n",
	       fz.n_seeds, done);
	for (i = 0; i < fz.n_seeds; i++)
		free(fz.seeds[i].data);
	free(fz.seeds);
	return 0;
}
