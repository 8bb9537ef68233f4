/* SPDX-License-Identifier: MIT */
/*
 * client-hold NAME...: hold each device ("held NAME" or "error NAME
 * ERRNO-NAME"), then run an application's loop printing events like
 * client-watch, so a test can see the library reconnect by itself and
 * announce the holds again.  Exits on SIGTERM (releasing nothing: the
 * daemon drops the holds with the connection).
 */
#include "client-common.h"

int main(int argc, char **argv)
{
	struct rdmad_client *client = rdmad_client_new(NULL);
	int i, err, failed = 0;

	client_catch_signals();
	if (!client || argc < 2)
		return 2;
	rdmad_client_set_callback(client, client_print_event, NULL);
	for (i = 1; i < argc; i++) {
		err = rdmad_client_hold(client, argv[i]);
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
