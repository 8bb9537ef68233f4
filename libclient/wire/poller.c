/* SPDX-License-Identifier: MIT */
/*
 * The pollable fd a client hands to the application: an epoll instance
 * holding the connection's socket and an eventfd.  The eventfd is raised
 * when a call other than rdmad_client_process() (a hold waiting for its
 * reply, get_snapshot) read events off the socket and queued them, and
 * cleared when they are dispatched.  No protocol knowledge lives here.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "poller.h"

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void poller_init(struct poller *poller)
{
	poller->epoll_fd = -1;
	poller->wake_fd = -1;
	poller->woken = false;
}

static int add_fd(struct poller *poller, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	if (epoll_ctl(poller->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	return 0;
}

static int open_fds(struct poller *poller)
{
	if (poller->epoll_fd < 0) {
		poller->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
		if (poller->epoll_fd < 0)
			return -errno;
	}
	if (poller->wake_fd < 0) {
		poller->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (poller->wake_fd < 0)
			return -errno;
		poller->woken = false;
		return add_fd(poller, poller->wake_fd);
	}
	return 0;
}

int poller_watch(struct poller *poller, int fd)
{
	int err = open_fds(poller);

	return err < 0 ? err : add_fd(poller, fd);
}

void poller_unwatch(struct poller *poller, int fd)
{
	if (poller->epoll_fd >= 0 && fd >= 0)
		epoll_ctl(poller->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
}

void poller_wake(struct poller *poller)
{
	uint64_t one = 1;

	if (poller->woken || poller->wake_fd < 0)
		return;
	if (write(poller->wake_fd, &one, sizeof(one)) == sizeof(one))
		poller->woken = true;
}

void poller_clear(struct poller *poller)
{
	uint64_t count;

	if (!poller->woken)
		return;
	if (read(poller->wake_fd, &count, sizeof(count)) < 0) {
		/* EAGAIN: already cleared; nothing else can fail here. */
	}
	poller->woken = false;
}

void poller_close(struct poller *poller)
{
	close_fd(&poller->epoll_fd);
	close_fd(&poller->wake_fd);
	poller->woken = false;
}
