/* SPDX-License-Identifier: MIT */
/*
 * The socket server (proto/PROTOCOL.md): one SOCK_SEQPACKET listener, one
 * small struct per client, one event loop.  This room holds the listener
 * and admission, and the server's lifecycle; server-int.h names the other
 * rooms (a connection, the request table, publishing).
 *
 * Admission.  The socket is usually open to every local user, so nothing
 * one user does may lock out the others: a uid other than root, the
 * admin group or rdmad's own gets at most max_clients_per_uid
 * connections, at most max_clients_per_namespace of them from one
 * container (where the kernel tells which that is), none while
 * REAPER_MAX_PENDING descriptors it passed wait to be closed (reaper.h),
 * and the last reserved_clients of max_clients are kept for root and the
 * admin group.  Whether a peer is root or in the admin group comes from
 * SO_PEERCRED and SO_PEERGROUPS, never from what it says.
 * A connection must say Hello within hello_timeout_ms, and says it once:
 * the generation page goes with the one Welcome, so a client cannot pin
 * descriptors in flight by asking again.  Refusals are counted
 * (server_refusals()) and logged once until a client is admitted again.
 *
 * The generation page: a 4 KiB memfd that the daemon maps read-write and
 * every client maps read-only, through an O_RDONLY re-open of it passed
 * with Welcome; clients can check for news without a syscall.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "client.h"
#include "log.h"
#include "nstable.h"
#include "publish.h"
#include "reaper.h"
#include "requests.h"
#include "server-int.h"
#include "server.h"
#include "views.h"

#define ACCEPT_BURST 64
#define ACCEPT_BACKOFF_SEC 1

/* ---- who is admin ---- */

static bool gid_listed(const gid_t *groups, size_t n, gid_t group)
{
	for (size_t i = 0; i < n; i++)
		if (groups[i] == group)
			return true;
	return false;
}

/* Supplementary groups as of connect(), from the kernel. */
static bool in_group(int fd, gid_t primary, gid_t group)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool found = false;

	if (group == (gid_t)-1)
		return false;
	if (primary == group)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		if (errno != ERANGE || !(groups = malloc(len)))
			return false;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
			len = 0;
	}
	found = gid_listed(groups, len / sizeof(gid_t), group);
	if (groups != small)
		free(groups);
	return found;
}

static bool peer_is_admin(const struct server *srv, int fd,
			  const struct ucred *cred)
{
	return cred->uid == 0 || in_group(fd, cred->gid, srv->opts.admin_group);
}

static void check_admin(struct client *c)
{
	struct ucred cred = {c->peer.pid, c->peer.uid, c->peer.gid};

	c->admin = peer_is_admin(c->srv, c->fd, &cred);
}

/* ---- the views' upkeep ---- */

static void on_settle(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	views_settle(srv->views);
}

/*
 * Another network namespace's uevents go to that namespace only, and
 * rdmad cannot open its devices for their async events: ask the kernel
 * about those with clients again every 2 s, through their RDMA netlink
 * socket (nstable_rescan(), one dump), so that a port that goes down in a
 * pod reaches its clients without their asking.
 */
static const struct timeval nsscan_period = {.tv_sec = 2};

static void on_nsscan(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	for (struct nstable *t = views_nstables(srv->views); t; t = t->next)
		if (t->refs)
			nstable_rescan(t);
}

/* ---- accepting ---- */

static void on_backoff(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	event_add(srv->ev_accept, NULL);
}

/* Out of descriptors: stop accepting for a while instead of spinning. */
static void accept_backoff(struct server *srv)
{
	struct timeval tv = {.tv_sec = ACCEPT_BACKOFF_SEC};

	if (!srv->logged_emfile)
		log_warn("accept: pausing for %d s", ACCEPT_BACKOFF_SEC);
	srv->logged_emfile = true;
	event_del(srv->ev_accept);
	evtimer_add(srv->ev_backoff, &tv);
}

static unsigned int clients_of_uid(const struct server *srv, uid_t uid)
{
	unsigned int n = 0;

	for (const struct client *c = srv->clients; c; c = c->next)
		n += c->peer.uid == uid;
	return n;
}

/* One container: the same uid in the same namespaces.  Where rdmad can
 * read other users' namespaces, the peers whose namespaces it could not
 * read (the process that connected is gone, or hidden) are one more
 * bucket per uid, bounded like a container, so that they never take a
 * sibling container's share.  Where it cannot (an unprivileged rdmad),
 * it cannot tell containers apart: max_clients_per_uid alone holds. */
static bool same_place(const struct peer *a, const struct peer *b)
{
	if (a->uid != b->uid || a->known != b->known)
		return false;
	return !a->known || (a->ns.mnt == b->ns.mnt && a->ns.net == b->ns.net &&
			     a->ns.pid == b->ns.pid);
}

/* Connections of @peer's uid from its namespaces (a container), or of
 * its uid's unknown bucket. */
static unsigned int clients_of_place(const struct server *srv,
				     const struct peer *peer)
{
	unsigned int n = 0;

	for (const struct client *c = srv->clients; c; c = c->next)
		n += same_place(&c->peer, peer);
	return n;
}

/* May this peer take one more slot?  See "Admission" at the top.  What
 * needs only SO_PEERCRED comes first, before rdmad looks at the peer's
 * process (which costs more): a flood of a uid over its bounds is turned
 * away cheaply.  *@exempt: root, the admin group or rdmad's own user. */
static enum server_refusal refusal_of_uid(const struct server *srv, int fd,
					  const struct ucred *cred,
					  bool *exempt)
{
	const struct server_options *o = &srv->opts;

	*exempt = false;
	if (srv->nclients >= o->max_clients)
		return SERVER_REFUSED_FULL;
	/* rdmad's own user could ptrace it anyway: a daemon run as a user
	 * of its own (a test suite as nobody) never locks that user out. */
	*exempt = peer_is_admin(srv, fd, cred) || cred->uid == geteuid();
	if (*exempt)
		return SERVER_REFUSED_NONE;
	if (srv->nclients + o->reserved_clients >= o->max_clients)
		return SERVER_REFUSED_RESERVED;
	if (clients_of_uid(srv, cred->uid) >= o->max_clients_per_uid)
		return SERVER_REFUSED_PER_UID;
	/* Everything of the uid's not let go of yet counts here, in the
	 * closer's queue too: a uid that floods connections, each with
	 * descriptors queued, is turned away cheaply while the closer
	 * catches up.  Reading (client.c) counts only rdmad's table. */
	if (reaper_waiting(srv->reaper, cred->uid) >= REAPER_MAX_PENDING)
		return SERVER_REFUSED_REAPING;
	return SERVER_REFUSED_NONE;
}

static enum server_refusal refusal_of_place(const struct server *srv,
					    const struct peer *peer)
{
	if (!peer->known && !srv->identifies_others)
		return SERVER_REFUSED_NONE;
	return clients_of_place(srv, peer) >=
			       srv->opts.max_clients_per_namespace
		       ? SERVER_REFUSED_PER_NAMESPACE
		       : SERVER_REFUSED_NONE;
}

static void refuse(struct server *srv, enum server_refusal why,
		   const struct peer *peer)
{
	static const char *const text[SERVER_REFUSED_COUNT] = {
		[SERVER_REFUSED_FULL] = "max_clients reached",
		[SERVER_REFUSED_RESERVED] =
			"the rest is reserved for root and the admin group",
		[SERVER_REFUSED_PER_UID] = "max_clients_per_uid reached",
		[SERVER_REFUSED_PER_NAMESPACE] =
			"max_clients_per_namespace reached",
		[SERVER_REFUSED_REAPING] =
			"descriptors it passed are still being closed",
	};

	srv->refusals[why]++;
	if (!srv->logged_refusal[why])
		log_warnx("refusing a connection of uid %u: %u clients, %s "
			  "(logged once until one is admitted)",
			  (unsigned int)peer->uid, srv->nclients, text[why]);
	srv->logged_refusal[why] = true;
}

/* Returns false when accept() has nothing more for now. */
static bool accept_one(struct server *srv)
{
	enum server_refusal why;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct client *c;
	struct peer peer;
	bool exempt;
	int fd;

	fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM)
			accept_backoff(srv);
		else if (errno != EAGAIN && errno != EINTR &&
			 errno != ECONNABORTED)
			log_warn("accept");
		return errno == EINTR || errno == ECONNABORTED;
	}
	srv->logged_emfile = false;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		reaper_close_connection(srv->reaper, fd, (uid_t)-1);
		return true;
	}
	why = refusal_of_uid(srv, fd, &cred, &exempt);
	if (why == SERVER_REFUSED_NONE) {
		peer_identify(fd, &cred, &peer);
		if (!exempt)
			why = refusal_of_place(srv, &peer);
	} else {
		peer = (struct peer){.pid = cred.pid, .uid = cred.uid};
	}
	if (why != SERVER_REFUSED_NONE) {
		refuse(srv, why, &peer);
		reaper_close_connection(srv->reaper, fd, peer.uid);
		return true;
	}
	c = client_new(srv, fd, &peer);
	if (!c) {
		reaper_close_connection(srv->reaper, fd, peer.uid);
		return true;
	}
	check_admin(c);
	memset(srv->logged_refusal, 0, sizeof(srv->logged_refusal));
	log_debug("client pid %d uid %d (%s) connected", c->peer.pid,
		  c->peer.uid, c->peer.comm);
	return true;
}

static void accept_wait_for_room(struct server *srv)
{
	if (!srv->logged_room)
		log_warnx("not accepting until clients' descriptors are "
			  "closed: %u in rdmad's table for clients, ceiling "
			  "%u (logged once)",
			  server_fds_for_clients(srv), srv->fd_ceiling);
	srv->logged_room = true;
	srv->accept_waiting_room = true;
	event_del(srv->ev_accept);
}

/* An accept installs one descriptor, and its Hello may bring more: with
 * no room for both, wait for the helpers to let some go. */
static void on_accept(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	for (int i = 0; i < ACCEPT_BURST; i++) {
		if (!server_room_for(srv, SERVER_FDS_PER_CLIENT)) {
			accept_wait_for_room(srv);
			return;
		}
		if (!accept_one(srv))
			break;
	}
}

/* Descriptors were let go of: what waited for room goes on. */
static void on_reaper_progress(void *arg)
{
	struct server *srv = arg;

	if (srv->accept_waiting_room &&
	    server_room_for(srv, SERVER_FDS_PER_CLIENT)) {
		srv->accept_waiting_room = false;
		srv->logged_room = false;
		event_add(srv->ev_accept, NULL);
	}
	for (struct client *c = srv->clients; c; c = c->next)
		client_room_again(c);
}

size_t server_closing_behind(const struct server *srv,
			     struct reaper_behind *ret, size_t max)
{
	return reaper_behind(srv->reaper, ret, max);
}

/* ---- the listening socket ---- */

/* Unlink @path only if it is a socket nobody answers on any more. */
static int remove_stale_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (r == 0)
		return -EADDRINUSE;
	if (errno != ECONNREFUSED)
		return -errno;
	return unlink(path) < 0 ? -errno : 0;
}

/*
 * The socket's directory, made if missing.  An existing one must not let
 * others swap the socket for something else between bind() and chown():
 * a real directory (not a link), owned by root or us, writable only by
 * its owner unless sticky (as /tmp is).
 */
static int check_parent_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat st;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	if (slash == dir)
		slash++;
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return -EPERM;
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		return -EPERM;
	return 0;
}

/* bind() with the mode already right (the umask decides a socket's
 * mode), so there is no chmod by path for a swapped file to catch. */
static int bind_with_mode(int fd, const struct sockaddr_un *sa, mode_t mode)
{
	mode_t old = umask(~mode & 0777);
	int r = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));

	umask(old);
	return r;
}

static int bind_socket(struct server *srv)
{
	const struct server_options *opts = &srv->opts;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, r;

	if (strlen(opts->socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", opts->socket_path);
	r = check_parent_dir(opts->socket_path);
	if (r == 0)
		r = remove_stale_socket(opts->socket_path);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind_with_mode(fd, &sa, opts->socket_mode) < 0)
		goto fail;
	srv->socket_path = strdup(opts->socket_path);
	if (!srv->socket_path)
		goto fail;
	/* The group by lchown: never through a link someone put there. */
	if (opts->socket_group != (gid_t)-1 &&
	    lchown(opts->socket_path, (uid_t)-1, opts->socket_group) < 0)
		goto fail;
	if (listen(fd, SOMAXCONN) < 0)
		goto fail;
	srv->listen_fd = fd;
	return 0;
fail:
	r = errno ? -errno : -ENOMEM;
	close(fd);
	return r;
}

static int adopt_socket(struct server *srv, int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	srv->listen_fd = fd;
	return 0;
}

/* ---- public ---- */

static int server_listen(struct server *srv)
{
	int r;

	if (srv->opts.listen_fd >= 0)
		r = adopt_socket(srv, srv->opts.listen_fd);
	else
		r = bind_socket(srv);
	if (r < 0) {
		log_warnc(r, "socket %s", srv->opts.socket_path);
		return r;
	}
	srv->ev_accept = event_new(srv->base, srv->listen_fd,
				   EV_READ | EV_PERSIST, on_accept, srv);
	srv->ev_backoff = evtimer_new(srv->base, on_backoff, srv);
	srv->ev_settle = evtimer_new(srv->base, on_settle, srv);
	srv->ev_nsscan = event_new(srv->base, -1, EV_PERSIST, on_nsscan, srv);
	if (!srv->ev_accept || !srv->ev_backoff || !srv->ev_settle ||
	    !srv->ev_nsscan ||
	    (srv->opts.netns_mode == VIEWS_NETNS_EXCLUSIVE &&
	     event_add(srv->ev_nsscan, &nsscan_period) < 0) ||
	    event_add(srv->ev_accept, NULL) < 0)
		return -ENOMEM;
	return 0;
}

/* What clients may cost in rdmad's table: its open file limit less what
 * rdmad keeps for its own work (an eighth of a small limit). */
static unsigned int fd_ceiling(void)
{
	struct rlimit rl;
	rlim_t keep;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur > UINT_MAX)
		return UINT_MAX;
	keep = rl.rlim_cur / 8 < SERVER_FDS_NOT_FOR_CLIENTS
		       ? rl.rlim_cur / 8
		       : SERVER_FDS_NOT_FOR_CLIENTS;
	return (unsigned int)(rl.rlim_cur - keep);
}

struct server *server_new(struct event_base *base, struct devices *table,
			  struct scan *scan, const struct server_options *opts)
{
	struct server *srv = calloc(1, sizeof(*srv));
	int r;

	if (!srv)
		return NULL;
	srv->base = base;
	srv->table = table;
	srv->scan = scan;
	srv->opts = *opts;
	srv->listen_fd = -1;
	srv->fd_ceiling = fd_ceiling();
	srv->identifies_others = peer_can_identify_others();
	srv->hooks = (struct server_hooks){requests_handle, publish_resync};
	srv->reaper = reaper_new(base, on_reaper_progress, srv);
	srv->views = views_new(table, opts->netns_mode, publish_ns_event, srv);
	srv->publish = publish_new();
	r = srv->views && srv->reaper && srv->publish ? server_listen(srv)
						      : -ENOMEM;
	if (r < 0) {
		server_free(srv);
		errno = -r;
		return NULL;
	}
	srv->opts.socket_path = srv->socket_path;
	return srv;
}

void server_free(struct server *srv)
{
	if (!srv)
		return;
	while (srv->clients)
		client_close(srv->clients);
	if (srv->ev_accept)
		event_free(srv->ev_accept);
	if (srv->ev_backoff)
		event_free(srv->ev_backoff);
	if (srv->ev_settle)
		event_free(srv->ev_settle);
	if (srv->ev_nsscan)
		event_free(srv->ev_nsscan);
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	if (srv->socket_path) {
		unlink(srv->socket_path);
		free(srv->socket_path);
	}
	views_free(srv->views);
	publish_free(srv->publish);
	reaper_free(srv->reaper);
	free(srv);
}

void server_set_limits(struct server *srv, const struct server_options *opts)
{
	srv->opts.max_clients = opts->max_clients;
	srv->opts.max_holds = opts->max_holds;
	srv->opts.max_holds_per_uid = opts->max_holds_per_uid;
	srv->opts.max_clients_per_uid = opts->max_clients_per_uid;
	srv->opts.max_clients_per_namespace = opts->max_clients_per_namespace;
	srv->opts.reserved_clients = opts->reserved_clients;
	srv->opts.hello_timeout_ms = opts->hello_timeout_ms;
	srv->opts.max_queue = opts->max_queue;
	if (srv->opts.admin_group != opts->admin_group) {
		srv->opts.admin_group = opts->admin_group;
		for (struct client *c = srv->clients; c; c = c->next)
			check_admin(c);
	}
}

unsigned int server_client_count(const struct server *srv)
{
	return srv->nclients;
}

uint64_t server_refusals(const struct server *srv, enum server_refusal why)
{
	return why < SERVER_REFUSED_COUNT ? srv->refusals[why] : 0;
}
