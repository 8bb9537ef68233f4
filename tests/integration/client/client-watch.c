/* SPDX-License-Identifier: MIT */
/*
 * client-watch [--lifecycle|--removing] [--count N]: subscribe through
 * librdmad and print a line per event ("event GEN TYPE NAME STATE
 * HOLDERS"), after a first line "ready GEN COUNT" once the first snapshot
 * is in.  Exits on SIGTERM or after N events.  --lifecycle opts into the
 * lifecycle feature (--removing into that and the removing feature),
 * adds each device's incarnation, readiness and aliases to its event
 * line, and prints the library's own list after each batch
 * (client-common.h).
 */
#include <stdlib.h>

#include "client-common.h"

int main(int argc, char **argv)
{
	struct rdmad_client *client = rdmad_client_new(NULL);
	struct rdmad_snapshot *snap;
	int count = 0, err, lifecycle;

	if (!client)
		return 1;
	lifecycle = client_lifecycle_arg(client, &argc, &argv);
	if (argc == 3 && strcmp(argv[1], "--count") == 0)
		count = atoi(argv[2]);
	client_catch_signals();
	rdmad_client_set_callback(client, client_print_event,
				  lifecycle ? client : NULL);
	err = rdmad_client_connect(client);
	if (err < 0) {
		fprintf(stderr, "connect %s: %s\n",
			rdmad_client_get_socket_path(client), strerror(-err));
		return 3;
	}
	snap = rdmad_client_get_snapshot(client);
	printf("ready %" PRIu64 " %zu\n", rdmad_snapshot_get_generation(snap),
	       rdmad_snapshot_get_count(snap));
	fflush(stdout);
	rdmad_snapshot_unref(snap);
	if (lifecycle)
		client_print_list(client);
	client_loop(client, count);
	rdmad_client_unref(client);
	return 0;
}
