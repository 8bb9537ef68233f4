/* SPDX-License-Identifier: MIT */
/*
 * Another network namespace's devices (nstable.h), asked of the kernel
 * through sockets its clients lent.  The kernel is
 * asked through a socket of that namespace (nlquery.c), never blocking:
 * a client that shares the socket can make an answer fail, which leaves
 * the table as it was until the next try, and can change nothing else.
 *
 * Which lent sockets a table keeps, and which it asks:
 *  - one per uid: each new view on the table offers its first client's
 *    socket, kept only if no socket of that uid is kept already, so one
 *    uid holds one place however many views its clients make;
 *  - at most NSTABLE_MAX_SOCKETS: when they are full a new one is not
 *    kept, except root's, which takes the last place;
 *  - asked in order: root's first (only root, or whoever root gave it
 *    to, holds a copy), then the others oldest first, so a client that
 *    comes later cannot push aside a socket that answers;
 *  - a socket whose exchange ends in anything but the kernel's answer to
 *    our own request (nlquery_socket_spoiled()) is closed, and the next
 *    one asked in the same rescan.
 * So a co-tenant that fills the socket it lent with junk loses that
 * socket, not the table: the others' sockets answer for everyone.  A
 * rescan costs at most NSTABLE_MAX_SOCKETS exchanges, each bounded by
 * nlquery.c; when none is left the table stays as it was, and the next
 * client to come lends a new one (views.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "nlquery.h"
#include "nstable.h"
#include "sysfs.h"

static void on_event(void *userdata, enum devices_event event,
		     const struct device *dev, const char *old_name)
{
	struct nstable *t = userdata;

	if (t->fn)
		t->fn(t->userdata, t, event, dev, old_name);
}

/* nl_fd is the socket asked first. */
static void sockets_changed(struct nstable *t)
{
	t->nl_fd = t->nsocks ? t->socks[0].fd : -1;
}

static void close_socket(struct nstable *t, unsigned int i)
{
	close(t->socks[i].fd);
	t->nsocks--;
	memmove(&t->socks[i], &t->socks[i + 1],
		(t->nsocks - i) * sizeof(t->socks[0]));
	sockets_changed(t);
}

/* A dup of @nl_fd at place @i (at most nsocks), making room at the end
 * if they are full. */
static int insert_socket(struct nstable *t, unsigned int i, int nl_fd,
			 uid_t uid)
{
	int fd = fcntl(nl_fd, F_DUPFD_CLOEXEC, 3);

	if (fd < 0)
		return -errno;
	if (t->nsocks == NSTABLE_MAX_SOCKETS)
		close_socket(t, t->nsocks - 1);
	memmove(&t->socks[i + 1], &t->socks[i],
		(t->nsocks - i) * sizeof(t->socks[0]));
	t->socks[i] = (struct nstable_socket){.fd = fd, .uid = uid};
	t->nsocks++;
	sockets_changed(t);
	return 1;
}

struct nstable *nstable_new(uint64_t cookie, uint64_t netns,
			    const char *pod_uid, int nl_fd, uid_t uid,
			    nstable_listener_fn fn, void *userdata)
{
	struct nstable *t = calloc(1, sizeof(*t));
	int r;

	/* Its own generations are never published: views count theirs. */
	if (!t || !(t->table = devices_new(0))) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->nl_fd = -1;
	r = insert_socket(t, 0, nl_fd, uid);
	if (r < 0) {
		devices_free(t->table);
		free(t);
		errno = -r;
		return NULL;
	}
	t->fn = fn;
	t->userdata = userdata;
	t->cookie = cookie;
	t->netns = netns;
	snprintf(t->pod_uid, sizeof(t->pod_uid), "%s", pod_uid);
	devices_set_listener(t->table, on_event, t);
	return t;
}

int nstable_add_socket(struct nstable *t, int nl_fd, uid_t uid)
{
	if (nl_fd < 0)
		return 0;
	for (unsigned int i = 0; i < t->nsocks; i++)
		if (t->socks[i].uid == uid)
			return 0;
	if (uid == 0)
		return insert_socket(t, 0, nl_fd, uid);
	if (t->nsocks == NSTABLE_MAX_SOCKETS)
		return 0;
	return insert_socket(t, t->nsocks, nl_fd, uid);
}

void nstable_drop_socket(struct nstable *t)
{
	while (t->nsocks)
		close_socket(t, t->nsocks - 1);
}

void nstable_take_socket(struct nstable *t, int nl_fd)
{
	insert_socket(t, 0, nl_fd, (uid_t)-1);
}

void nstable_free(struct nstable *t)
{
	if (!t)
		return;
	devices_apply_scan(t->table, NULL, 0);
	devices_free(t->table);
	nstable_drop_socket(t);
	free(t);
}

/* The kernel's answer through the first socket that gives one; those
 * that give junk instead are closed. */
static int ask(struct nstable *t, struct device_record **ret, size_t *ret_n)
{
	int r;

	while (t->nsocks) {
		r = nlquery_devices(t->socks[0].fd, ret, ret_n,
				    NSTABLE_MAX_DEVICES);
		if (!nlquery_socket_spoiled(r))
			return r;
		/* A client's doing: debug, so that it cannot fill the log. */
		log_debug("network namespace %llu: the socket lent by uid %d "
			  "gave no answer (%s): closed, %u left",
			  (unsigned long long)t->cookie, (int)t->socks[0].uid,
			  strerror(-r), t->nsocks - 1);
		close_socket(t, 0);
	}
	return -ESRCH;
}

int nstable_rescan(struct nstable *t)
{
	struct device_record *devs = NULL;
	size_t n = 0;
	int r;

	r = ask(t, &devs, &n);
	if (r == -ESRCH)
		return r;
	if (r == -E2BIG && !t->capped)
		log_warnx("network namespace %llu: more than %d RDMA devices, "
			  "the rest left out",
			  (unsigned long long)t->cookie, NSTABLE_MAX_DEVICES);
	t->capped = r == -E2BIG;
	if (r < 0 && !(r == -E2BIG && devs))
		return r;
	r = devices_apply_scan(t->table, devs, n);
	records_free(devs, n);
	return r;
}

const struct device *nstable_find_identity(const struct nstable *t,
					   const char *identity)
{
	const struct device *dev = devices_find_identity(t->table, identity);

	return dev && device_state(dev) == DEVICE_STATE_PRESENT ? dev : NULL;
}

void nstable_drop(struct nstable *t, const struct device *dev)
{
	char name[RECORD_NAME_MAX];

	snprintf(name, sizeof(name), "%s", device_info(dev)->name);
	devices_apply_one(t->table, name, NULL);
}
