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
	}
	return "unknown";
}

/* One line an event: "event GENERATION TYPE NAME STATE HOLDERS". */
static inline void client_print_event(struct rdmad_client *client,
				      enum rdmad_event_type type,
				      const struct rdmad_device *device,
				      uint64_t generation, void *userdata)
{
	(void)client;
	(void)userdata;
	printf("event %" PRIu64 " %s %s %s %u\n", generation,
	       client_event_name(type),
	       device ? rdmad_device_get_name(device) : "-",
	       device ? (rdmad_device_get_state(device) == RDMAD_DEVICE_PRESENT
				 ? "present"
				 : "removed")
		      : "-",
	       rdmad_device_get_holder_count(device));
	fflush(stdout);
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
	}
}

#endif
