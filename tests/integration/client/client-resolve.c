/* SPDX-License-Identifier: MIT */
/*
 * client-resolve NAME_OR_ALIAS...: print "resolved ARG NAME" for each
 * argument rdmad_client_resolve() maps to a present device, else "error
 * ARG ERRNO-TEXT".  Exits 1 if any failed.
 */
#include <stdlib.h>

#include "client-common.h"

int main(int argc, char **argv)
{
	struct rdmad_client *client = rdmad_client_new(NULL);
	int i, err, failed = 0;
	char *name;

	if (!client || argc < 2)
		return 2;
	for (i = 1; i < argc; i++) {
		err = rdmad_client_resolve(client, argv[i], &name);
		if (err < 0) {
			printf("error %s %s\n", argv[i], strerror(-err));
			failed = 1;
			continue;
		}
		printf("resolved %s %s\n", argv[i], name);
		free(name);
	}
	rdmad_client_unref(client);
	return failed;
}
