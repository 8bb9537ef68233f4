/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the /proc texts rdmad reads about a client (peer.c):
 * /proc/PID/cgroup, whose path any process with a delegated cgroup names
 * itself, and /proc/PID/status; and /etc/subuid (owner.c), root's file
 * but read by a daemon that must never crash on it.  The input is every
 * text at once.  Aborts if a pod UID comes out that is not a lower-case
 * UUID, a pid that is not positive, or a subuid range that is empty,
 * wraps around, or does not own its own first uid.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "owner.h"
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

static void check_subuid(const char *text)
{
	struct owner_range *r;
	size_t n;

	if (owner_parse_subuid(text, &r, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (!r[i].count || r[i].first > UINT32_MAX - r[i].count)
			abort();
		/* An earlier range may hold it first: then that one's. */
		if (owner_in(r, i + 1, r[i].first) != r[i].owner &&
		    owner_in(r, i, r[i].first) == r[i].first)
			abort();
	}
	free(r);
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
	check_subuid(text);
	free(text);
	return 0;
}
