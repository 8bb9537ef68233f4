/* SPDX-License-Identifier: MIT */
/*
 * Shared bits of the client test programs that the integration tests
 * (tests/integration/test_client.py) drive: event names, a line printer
 * and the poll loop an application would run around librdmad.
 */
#ifndef CLIENT_COMMON_H
#define CLIENT_COMMON_H

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "rdmad.h"

static volatile sig_atomic_t client_stop;
/* Set by --lifecycle: print the library's list after each batch. */
static int client_print_lists;

static void client_on_signal(int sig)
{
	(void)sig;
	client_stop = 1;
}

static inline void client_catch_signals(void)
{
	struct sigaction sa = {.sa_handler = client_on_signal};

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

static inline const char *client_event_name(enum rdmad_event_type type)
{
	switch (type) {
	case RDMAD_EVENT_ADDED:
		return "added";
	case RDMAD_EVENT_REMOVED:
		return "removed";
	case RDMAD_EVENT_CHANGED:
		return "changed";
	case RDMAD_EVENT_RENAMED:
		return "renamed";
	case RDMAD_EVENT_RELEASED:
		return "released";
	case RDMAD_EVENT_RESYNC:
		return "resync";
	case RDMAD_EVENT_RETURNED:
		return "returned";
	case RDMAD_EVENT_READY:
		return "ready";
	case RDMAD_EVENT_UNREADY:
		return "unready";
	case RDMAD_EVENT_EXPECTING:
		return "expecting";
	case RDMAD_EVENT_SETTLED:
		return "settled";
	case RDMAD_EVENT_REMOVING:
		return "removing";
	}
	return "unknown";
}

static inline const char *client_state_name(const struct rdmad_device *device)
{
	if (!device)
		return "-";
	switch (rdmad_device_get_state(device)) {
	case RDMAD_DEVICE_PRESENT:
		return "present";
	case RDMAD_DEVICE_REMOVED:
		return "removed";
	case RDMAD_DEVICE_AWAY:
		return "away";
	}
	return "unknown";
}

/*
 * One line an event: "event GENERATION TYPE NAME STATE HOLDERS", then,
 * with the lifecycle feature, "INCARNATION READY ALIASES" (ALIASES
 * comma-separated, "-" for none); EXPECTING and SETTLED print
 * "event GENERATION TYPE PF - EXPECTED READY".
 */
static inline void client_print_life(const struct rdmad_device *device)
{
	unsigned int i, n = rdmad_device_get_alias_count(device);

	printf(" %" PRIu64 " %d ", rdmad_device_get_incarnation(device),
	       rdmad_device_is_ready(device));
	for (i = 0; i < n; i++)
		printf("%s%s", i ? "," : "", rdmad_device_get_alias(device, i));
	printf("%s", n ? "" : "-");
}

static inline void client_print_event(struct rdmad_client *client,
				      enum rdmad_event_type type,
				      const struct rdmad_device *device,
				      uint64_t generation, void *userdata)
{
	const struct rdmad_sriov *sriov = rdmad_client_get_event_sriov(client);
	int lifecycle = userdata != NULL;

	if (sriov) {
		printf("event %" PRIu64 " %s %s - %u %u\n", generation,
		       client_event_name(type), rdmad_sriov_get_pf(sriov),
		       rdmad_sriov_get_expected(sriov),
		       rdmad_sriov_get_ready(sriov));
		fflush(stdout);
		return;
	}
	printf("event %" PRIu64 " %s %s %s %u", generation,
	       client_event_name(type),
	       device ? rdmad_device_get_name(device) : "-",
	       client_state_name(device),
	       rdmad_device_get_holder_count(device));
	if (lifecycle && device)
		client_print_life(device);
	printf("\n");
	fflush(stdout);
}

/* --lifecycle (or --removing) as the first argument: opt in, and say so
 * to the printer (its userdata). */
static inline int client_lifecycle_arg(struct rdmad_client *client, int *argc,
				       char ***argv)
{
	unsigned int features = RDMAD_CLIENT_FEATURE_LIFECYCLE;

	if (*argc < 2)
		return 0;
	if (strcmp((*argv)[1], "--removing") == 0)
		features |= RDMAD_CLIENT_FEATURE_REMOVING;
	else if (strcmp((*argv)[1], "--lifecycle") != 0)
		return 0;
	(*argv)[1] = (*argv)[0];
	(*argv)++;
	(*argc)--;
	client_print_lists = 1;
	return rdmad_client_set_features(client, features) == 0;
}

/*
 * The library's list as two lines: "list GEN NAME:STATE:INCARNATION:
 * READY:HOLDERS..." and the ready set, "usable GEN NAME...".
 */
static inline void client_print_list(struct rdmad_client *client)
{
	struct rdmad_snapshot *snap = rdmad_client_get_snapshot(client);
	const struct rdmad_device *dev;
	size_t i;

	if (!snap)
		return;
	printf("list %" PRIu64, rdmad_snapshot_get_generation(snap));
	for (i = 0; (dev = rdmad_snapshot_get_device(snap, i)); i++)
		printf(" %s:%s:%" PRIu64 ":%d:%u", rdmad_device_get_name(dev),
		       client_state_name(dev),
		       rdmad_device_get_incarnation(dev),
		       rdmad_device_is_ready(dev),
		       rdmad_device_get_holder_count(dev));
	printf("\nusable %" PRIu64, rdmad_snapshot_get_generation(snap));
	for (i = 0; (dev = rdmad_snapshot_get_ready_device(snap, i)); i++)
		printf(" %s", rdmad_device_get_name(dev));
	printf("\n");
	fflush(stdout);
	rdmad_snapshot_unref(snap);
}

/* Run the application's loop until a signal or @max_events events. */
static inline void client_loop(struct rdmad_client *client, int max_events)
{
	int seen = 0, n;

	while (!client_stop && (max_events <= 0 || seen < max_events)) {
		struct pollfd pfd = {.fd = rdmad_client_get_fd(client),
				     .events = POLLIN};
		int timeout = rdmad_client_get_timeout(client);

		/* A negative fd is ignored by poll(): we only wait. */
		if (poll(&pfd, 1,
			 timeout < 0 || timeout > 200 ? 200 : timeout) < 0 &&
		    errno != EINTR)
			break;
		n = rdmad_client_process(client);
		if (n > 0)
			seen += n;
		if (n > 0 && client_print_lists)
			client_print_list(client);
	}
}

#endif
