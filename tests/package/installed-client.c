/* SPDX-License-Identifier: MIT */
/*
 * Built by scripts/package.sh against the header and pkg-config file of
 * the extracted librdmad-dev, run against the extracted librdmad1 and the
 * extracted rdmad: connects to the daemon at argv[1] and prints its
 * generation and device count, then which file each of librdmad's and
 * libibverbs' fork calls came from, so the script can tell that the
 * installed library, and under LD_PRELOAD the installed shim, were used.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdmad.h>

static void print_origin(const char *name, void *fn)
{
	Dl_info info;

	if (dladdr(fn, &info) && info.dli_fname)
		printf("%s from %s\n", name, info.dli_fname);
	else
		printf("%s from nowhere known\n", name);
}

int main(int argc, char **argv)
{
	struct rdmad_client *client;
	struct rdmad_snapshot *snap;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: installed-client SOCKET\n");
		return 2;
	}
	client = rdmad_client_new(argv[1]);
	if (!client) {
		perror("rdmad_client_new");
		return 1;
	}
	r = rdmad_client_connect(client);
	if (r < 0) {
		fprintf(stderr, "connect %s: %s\n", argv[1], strerror(-r));
		rdmad_client_unref(client);
		return 1;
	}
	snap = rdmad_client_get_snapshot(client);
	if (!snap) {
		perror("rdmad_client_get_snapshot");
		rdmad_client_unref(client);
		return 1;
	}
	printf("generation %llu, %zu devices\n",
	       (unsigned long long)rdmad_snapshot_get_generation(snap),
	       rdmad_snapshot_get_count(snap));
	printf("fork tracking: %d\n", rdmad_is_fork_initialized());
	print_origin("rdmad_client_new", (void *)rdmad_client_new);
	print_origin("ibv_fork_init", (void *)ibv_fork_init);
	rdmad_snapshot_unref(snap);
	rdmad_client_unref(client);
	return 0;
}
