/* SPDX-License-Identifier: MIT */
/*
 * client-hold [--open] NAME...: hold each device ("held NAME" or "error
 * NAME ERRNO-TEXT"; with --open through rdmad_client_open_device(), which
 * opens it with libibverbs first), then run an application's loop printing
 * events like client-watch, so a test can see the library reconnect by itself
 * and announce the holds again.  Exits on SIGTERM (releasing nothing: the
 * daemon drops the holds with the connection).
 */
#include <infiniband/verbs.h>

#include "client-common.h"

static int hold(struct rdmad_client *client, const char *name, int open)
{
	struct ibv_context *context;

	if (!open)
		return rdmad_client_hold(client, name);
	context = rdmad_client_open_device(client, name);
	return context ? 0 : -errno;
}

int main(int argc, char **argv)
{
	struct rdmad_client *client = rdmad_client_new(NULL);
	int i, err, failed = 0, open = 0;

	client_catch_signals();
	if (!client || argc < 2)
		return 2;
	rdmad_client_set_callback(client, client_print_event, NULL);
	if (strcmp(argv[1], "--open") == 0)
		open = 1;
	for (i = 1 + open; i < argc; i++) {
		err = hold(client, argv[i], open);
		if (err < 0) {
			printf("error %s %s\n", argv[i], strerror(-err));
			failed = 1;
		} else {
			printf("held %s\n", argv[i]);
		}
	}
	fflush(stdout);
	client_loop(client, 0);
	rdmad_client_unref(client);
	return failed;
}
