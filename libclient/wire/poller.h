/* SPDX-License-Identifier: MIT */
/*
 * The client's pollable fd (poller.c): an epoll instance holding the
 * connection's socket and an eventfd that is raised when events were
 * queued by a call other than rdmad_client_process(), so a poll loop never
 * misses them.  Part of the wire layer: it calls no other libclient
 * module.  Not installed.
 */
#ifndef RDMAD_POLLER_H
#define RDMAD_POLLER_H

#include <stdbool.h>

struct poller {
	int epoll_fd; /* -1 until the first poller_watch() */
	int wake_fd;
	bool woken;
};

void poller_init(struct poller *poller);
/* Add @fd (creating the epoll instance and the eventfd if needed). */
int poller_watch(struct poller *poller, int fd);
/* Take @fd out again, before it is closed. */
void poller_unwatch(struct poller *poller, int fd);
/* Make the epoll fd readable until poller_clear(). */
void poller_wake(struct poller *poller);
void poller_clear(struct poller *poller);
/* Close our fds only: after fork(), the epoll instance is shared with the
 * parent, which must keep what it watches. */
void poller_close(struct poller *poller);

#endif
