/* SPDX-License-Identifier: MIT */
/*
 * many-clients N: N librdmad clients in one process, each connected to
 * rdmad ($RDMAD_SOCKET) with its own Hello, for
 * tests/integration/test_connection_bounds.py (N9: what a connection costs
 * rdmad in descriptors).  Prints "connected N" once every one is
 * connected (or "error I ERRNO-TEXT" and exits 1), then keeps them until
 * stdin reaches EOF or SIGTERM.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmad.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct rdmad_client **clients;
	long n;
	int r;

	if (argc != 2 || (n = strtol(argv[1], NULL, 10)) <= 0 || n > 100000) {
		fprintf(stderr, "usage: many-clients N\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	clients = calloc((size_t)n, sizeof(*clients));
	if (!clients)
		return 1;
	for (long i = 0; i < n; i++) {
		clients[i] = rdmad_client_new(NULL);
		if (!clients[i]) {
			printf("error %ld %s\n", i, strerror(errno));
			return 1;
		}
		r = rdmad_client_connect(clients[i]);
		if (r < 0) {
			printf("error %ld %s\n", i, strerror(-r));
			return 1;
		}
	}
	printf("connected %ld\n", n);
	fflush(stdout);
	while (!stop) {
		struct pollfd p = {.fd = 0, .events = POLLIN};
		char c;

		if (poll(&p, 1, -1) < 0)
			continue;
		if (read(0, &c, 1) <= 0)
			break;
	}
	for (long i = 0; i < n; i++)
		rdmad_client_unref(clients[i]);
	free(clients);
	return 0;
}
