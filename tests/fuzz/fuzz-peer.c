/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the /proc texts rdmad reads about a client (peer.c):
 * /proc/PID/cgroup, whose path any process with a delegated cgroup names
 * itself, and /proc/PID/status.  The input is both texts at once.
 * Aborts if a pod UID comes out that is not a lower-case UUID, or a pid
 * that is not positive.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_uuid(const char *uid)
{
	if (strlen(uid) != 36)
		abort();
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? uid[i] != '-'
			 : !isxdigit((unsigned char)uid[i]) ||
				    isupper((unsigned char)uid[i]))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	char uid[PEER_POD_UID_MAX];
	pid_t pid;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (peer_parse_pod_uid(text, uid))
		check_uuid(uid);
	else if (uid[0])
		abort();
	if (peer_parse_nspid(text, &pid) == 0 && pid <= 0)
		abort();
	free(text);
	return 0;
}
