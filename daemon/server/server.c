/* SPDX-License-Identifier: MIT */
/*
 * The socket server (proto/PROTOCOL.md): one SOCK_SEQPACKET listener, one
 * small struct per client, one event loop.  This file holds the
 * listeners and admission, and the server's lifecycle; server-int.h names
 * the others (a connection, the request table, publishing).
 *
 * Admission.  The public socket is usually open to every local user, so
 * nothing one user does may lock out the others.  Bounds are per owner
 * (owner.h: a user and its subordinate uids are one): an owner other
 * than root, the admin group or rdmad's own user gets at most
 * max_clients_per_uid connections (scaled down with max_clients where
 * the open file limit leaves fewer clients, main.c), at most
 * max_clients_per_namespace of them from one container (where the kernel tells
 * which that is), none while REAPER_MAX_PENDING descriptors it passed wait to
 * be closed (reaper.h), and the last reserved_clients of max_clients are kept
 * for root and the admin group.  The control socket, beside the public one,
 * admits root, the admin group and rdmad's own user only, into slots and
 * room of its own (server-options.h), the last SERVER_CONTROL_ROOT of
 * them for root and rdmad's own user alone, so whatever others do to the
 * public socket, and whatever the admin group does to the control one,
 * root is answered.  Whether a peer is root or in the
 * admin group comes from SO_PEERCRED and SO_PEERGROUPS, never from what
 * it says.
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
#include "owner.h"
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

static unsigned int clients_of_owner(const struct server *srv, uid_t owner)
{
	unsigned int n = 0;

	for (const struct client *c = srv->clients; c; c = c->next)
		n += !c->control && c->peer.owner == owner;
	return n;
}

/* One container: the same owner in the same namespaces.  Where rdmad can
 * read other users' namespaces, the peers whose namespaces it could not
 * read (the process that connected is gone, or hidden) are one more
 * bucket per owner, bounded like a container, so that they never take a
 * sibling container's share.  Where it cannot (an unprivileged rdmad),
 * it cannot tell containers apart: max_clients_per_uid alone holds. */
static bool same_place(const struct peer *a, const struct peer *b)
{
	if (a->owner != b->owner || a->known != b->known)
		return false;
	return !a->known || (a->ns.mnt == b->ns.mnt && a->ns.net == b->ns.net &&
			     a->ns.pid == b->ns.pid);
}

/* Connections of @peer's owner from its namespaces (a container), or
 * of its owner's unknown bucket. */
static unsigned int clients_of_place(const struct server *srv,
				     const struct peer *peer)
{
	unsigned int n = 0;

	for (const struct client *c = srv->clients; c; c = c->next)
		n += !c->control && same_place(&c->peer, peer);
	return n;
}

/* The bounds of one owner (owner.h). */
static enum server_refusal refusal_of_owner(const struct server *srv,
					    uid_t owner)
{
	if (clients_of_owner(srv, owner) >= srv->opts.max_clients_per_uid)
		return SERVER_REFUSED_PER_UID;
	/* Everything of the owner's not let go of yet counts here: an owner
	 * that floods connections, each with descriptors queued, is turned away
	 * cheaply while its lane catches up. */
	if (reaper_waiting(srv->reaper, owner) >= REAPER_MAX_PENDING)
		return SERVER_REFUSED_REAPING;
	return SERVER_REFUSED_NONE;
}

/* The control socket's connections of the admin group's members other
 * than root and rdmad's own user. */
static unsigned int control_of_members(const struct server *srv)
{
	unsigned int n = 0;

	for (const struct client *c = srv->clients; c; c = c->next)
		n += c->control && c->peer.uid != 0 && c->peer.uid != geteuid();
	return n;
}

/* A slot of the control socket: root and rdmad's own user take any of
 * SERVER_CONTROL_CLIENTS, the admin group's other members all but the
 * last SERVER_CONTROL_ROOT. */
static enum server_refusal refusal_of_control(const struct server *srv,
					      const struct ucred *cred,
					      bool exempt)
{
	if (!exempt || srv->ncontrol >= SERVER_CONTROL_CLIENTS)
		return SERVER_REFUSED_CONTROL;
	if (cred->uid != 0 && cred->uid != geteuid() &&
	    control_of_members(srv) >=
		    SERVER_CONTROL_CLIENTS - SERVER_CONTROL_ROOT)
		return SERVER_REFUSED_CONTROL;
	return SERVER_REFUSED_NONE;
}

/* May this peer take one more slot (of the control socket's where
 * @control)?  See "Admission" at the top.  What needs only SO_PEERCRED
 * and /etc/subuid comes first, before rdmad looks at the peer's process
 * (which costs more): a flood of an owner over its bounds is turned away
 * cheaply.  *@exempt: root, the admin group or rdmad's own user. */
static enum server_refusal refusal_of_uid(const struct server *srv, int fd,
					  const struct ucred *cred, uid_t owner,
					  bool control, bool *exempt)
{
	const struct server_options *o = &srv->opts;
	unsigned int public = srv->nclients - srv->ncontrol;

	/* rdmad's own user could ptrace it anyway: a daemon run as a user
	 * of its own (a test suite as nobody) never locks that user out. */
	*exempt = peer_is_admin(srv, fd, cred) || cred->uid == geteuid();
	if (control)
		return refusal_of_control(srv, cred, *exempt);
	if (public >= o->max_clients)
		return SERVER_REFUSED_FULL;
	if (*exempt)
		return SERVER_REFUSED_NONE;
	if (public + o->reserved_clients >= o->max_clients)
		return SERVER_REFUSED_RESERVED;
	return refusal_of_owner(srv, owner);
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
			"descriptors its owner passed are still being closed",
		[SERVER_REFUSED_CONTROL] =
			"the control socket: not root nor the admin group, or "
			"its slots are full",
	};

	srv->refusals[why]++;
	if (!srv->logged_refusal[why])
		log_warnx("refusing a connection of uid %u (owner %u): %u "
			  "clients, %s (logged once until one is admitted)",
			  (unsigned int)peer->uid, (unsigned int)peer->owner,
			  srv->nclients, text[why]);
	srv->logged_refusal[why] = true;
}

/* Can rdmad read the peer's namespaces (peer.h)?  Not another uid's,
 * not a subordinate of rdmad's user, without CAP_SYS_PTRACE: the kernel's
 * answer is known, and asking it costs 6 of the ~23 syscalls of a flood's
 * connection. */
static bool may_look_into(const struct server *srv, const struct ucred *cred,
			  uid_t owner)
{
	uid_t me = geteuid();

	return srv->identifies_others || cred->uid == me || owner == me;
}

/* Admission of the connection @fd, accepted on the control socket
 * (@control) or the public one: the peer, or SERVER_REFUSED_NONE. */
static enum server_refusal admit(struct server *srv, int fd, bool control,
				 struct peer *peer)
{
	enum server_refusal why;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	bool exempt;
	uid_t owner;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		*peer = (struct peer){.uid = (uid_t)-1, .owner = (uid_t)-1};
		return SERVER_REFUSED_FULL;
	}
	owner = owner_of_uid(cred.uid);
	why = refusal_of_uid(srv, fd, &cred, owner, control, &exempt);
	if (why != SERVER_REFUSED_NONE) {
		*peer = (struct peer){
			.pid = cred.pid, .uid = cred.uid, .owner = owner};
		return why;
	}
	if (may_look_into(srv, &cred, owner))
		peer_identify(fd, &cred, peer);
	else
		peer_identify_stranger(&cred, peer);
	if (exempt)
		return SERVER_REFUSED_NONE;
	why = refusal_of_place(srv, peer);
	/* The kernel named another owner than /etc/subuid did. */
	if (why == SERVER_REFUSED_NONE && peer->owner != owner)
		why = refusal_of_owner(srv, peer->owner);
	return why;
}

/* Returns false when accept() has nothing more for now. */
static bool accept_one(struct server *srv, int listen_fd, bool control)
{
	enum server_refusal why;
	struct client *c;
	struct peer peer;
	int fd;

	fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
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
	why = admit(srv, fd, control, &peer);
	if (why != SERVER_REFUSED_NONE) {
		if (peer.uid != (uid_t)-1)
			refuse(srv, why, &peer);
		reaper_close_connection(srv->reaper, fd, peer.owner);
		return true;
	}
	c = client_new(srv, fd, &peer, control);
	if (!c) {
		reaper_close_connection(srv->reaper, fd, peer.owner);
		return true;
	}
	check_admin(c);
	memset(srv->logged_refusal, 0, sizeof(srv->logged_refusal));
	log_debug("client pid %d uid %d owner %d (%s) connected%s", c->peer.pid,
		  c->peer.uid, c->peer.owner, c->peer.comm,
		  control ? " to the control socket" : "");
	return true;
}

static void accept_wait_for_room(struct server *srv, bool control)
{
	if (!srv->logged_room)
		log_warnx("not accepting on the %s socket until clients' "
			  "descriptors are closed: %u in rdmad's table for "
			  "clients, ceiling %u (logged once)",
			  control ? "control" : "public",
			  server_fds_for_clients(srv), srv->fd_ceiling);
	srv->logged_room = true;
	if (control)
		srv->control_waiting_room = true;
	else
		srv->accept_waiting_room = true;
	event_del(control ? srv->ev_control : srv->ev_accept);
}

/* Room for one more connection: its descriptor and what its Hello may
 * bring; on the public socket, no owner's closer flooded (reaper.h). */
static bool room_to_accept(const struct server *srv, bool control)
{
	return server_room_for(srv, SERVER_FDS_PER_CLIENT, control) &&
	       (control || !reaper_flooded(srv->reaper));
}

/* An accept installs one descriptor, and its Hello may bring more: with
 * no room for both, wait for the helpers to let some go. */
static void accept_burst(struct server *srv, int listen_fd, bool control)
{
	for (int i = 0; i < ACCEPT_BURST; i++) {
		if (!room_to_accept(srv, control)) {
			accept_wait_for_room(srv, control);
			return;
		}
		if (!accept_one(srv, listen_fd, control))
			break;
	}
}

static void on_accept(evutil_socket_t fd, short what, void *arg)
{
	accept_burst(arg, (int)fd, false);
}

static void on_control(evutil_socket_t fd, short what, void *arg)
{
	accept_burst(arg, (int)fd, true);
}

/* Descriptors were let go of: what waited for room goes on. */
static void on_reaper_progress(void *arg)
{
	struct server *srv = arg;

	if (srv->accept_waiting_room && room_to_accept(srv, false)) {
		srv->accept_waiting_room = false;
		srv->logged_room = false;
		event_add(srv->ev_accept, NULL);
	}
	if (srv->control_waiting_room && room_to_accept(srv, true)) {
		srv->control_waiting_room = false;
		event_add(srv->ev_control, NULL);
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

/* Bind and listen on @path with @mode and @group ((gid_t)-1: as is):
 * the descriptor, or -errno. */
static int bind_socket(const char *path, mode_t mode, gid_t group)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	r = check_parent_dir(path);
	if (r == 0)
		r = remove_stale_socket(path);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind_with_mode(fd, &sa, mode) < 0)
		goto fail;
	/* The group by lchown: never through a link someone put there. */
	if ((group != (gid_t)-1 && lchown(path, (uid_t)-1, group) < 0) ||
	    listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		unlink(path);
		close(fd);
		return r;
	}
	return fd;
fail:
	r = -errno;
	close(fd);
	return r;
}

static int adopt_socket(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	return fd;
}

static int public_socket(struct server *srv)
{
	const struct server_options *o = &srv->opts;
	int fd;

	if (o->listen_fd >= 0)
		return adopt_socket(o->listen_fd);
	fd = bind_socket(o->socket_path, o->socket_mode, o->socket_group);
	if (fd >= 0 && !(srv->socket_path = strdup(o->socket_path))) {
		close(fd);
		return -ENOMEM;
	}
	return fd;
}

/* The control socket: passed by systemd (rdmad-control.socket), else
 * bound beside the public one, mode 0600, or 0660 for the admin group
 * where rdmad may give it that group. */
static int control_socket(struct server *srv)
{
	const struct server_options *o = &srv->opts;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int fd;

	if (o->control_fd >= 0)
		return adopt_socket(o->control_fd);
	if (!o->socket_path ||
	    snprintf(path, sizeof(path), "%s%s", o->socket_path,
		     WIRE_CONTROL_SUFFIX) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = o->admin_group != (gid_t)-1
		     ? bind_socket(path, 0660, o->admin_group)
		     : -EPERM;
	if (fd == -EPERM)
		fd = bind_socket(path, 0600, (gid_t)-1);
	if (fd >= 0 && !(srv->control_path = strdup(path))) {
		close(fd);
		return -ENOMEM;
	}
	return fd;
}

/* ---- public ---- */

static int server_listen(struct server *srv)
{
	int r = public_socket(srv);

	if (r < 0) {
		log_warnc(r, "socket %s", srv->opts.socket_path);
		return r;
	}
	srv->listen_fd = r;
	/* Without it root shares the public socket with everybody: said,
	 * not fatal (rdmactl then uses the public one). */
	r = control_socket(srv);
	if (r < 0)
		log_warnc(r,
			  "no control socket at %s%s: root and the admin "
			  "group share the public socket",
			  srv->opts.socket_path ? srv->opts.socket_path : "",
			  WIRE_CONTROL_SUFFIX);
	srv->control_fd = r < 0 ? -1 : r;
	srv->ev_accept = event_new(srv->base, srv->listen_fd,
				   EV_READ | EV_PERSIST, on_accept, srv);
	srv->ev_control = event_new(srv->base, srv->control_fd,
				    EV_READ | EV_PERSIST, on_control, srv);
	if (srv->ev_control)
		event_priority_set(srv->ev_control, SERVER_PRIORITY_CONTROL);
	srv->ev_backoff = evtimer_new(srv->base, on_backoff, srv);
	srv->ev_settle = evtimer_new(srv->base, on_settle, srv);
	srv->ev_nsscan = event_new(srv->base, -1, EV_PERSIST, on_nsscan, srv);
	if (!srv->ev_accept || !srv->ev_control || !srv->ev_backoff ||
	    !srv->ev_settle || !srv->ev_nsscan ||
	    (srv->opts.netns_mode == VIEWS_NETNS_EXCLUSIVE &&
	     event_add(srv->ev_nsscan, &nsscan_period) < 0) ||
	    event_add(srv->ev_accept, NULL) < 0 ||
	    (srv->control_fd >= 0 && event_add(srv->ev_control, NULL) < 0))
		return -ENOMEM;
	return 0;
}

static unsigned int fd_ceiling(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT_MAX;
	return server_fd_ceiling(rl.rlim_cur);
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
	srv->listen_fd = srv->control_fd = -1;
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
	if (srv->ev_control)
		event_free(srv->ev_control);
	if (srv->ev_backoff)
		event_free(srv->ev_backoff);
	if (srv->ev_settle)
		event_free(srv->ev_settle);
	if (srv->ev_nsscan)
		event_free(srv->ev_nsscan);
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	if (srv->control_fd >= 0)
		close(srv->control_fd);
	if (srv->socket_path) {
		unlink(srv->socket_path);
		free(srv->socket_path);
	}
	if (srv->control_path) {
		unlink(srv->control_path);
		free(srv->control_path);
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
