/* SPDX-License-Identifier: MIT */
/*
 * daemon/metrics/sockdiag.c on real loopback connections: the owner of a
 * client's socket, seen from the accepted end, over IPv4, IPv6 and IPv4 on an
 * IPv6 listener; another uid's (as root); no connection where there is none (a
 * port nobody has, a listening socket); and no owner for a socket its client
 * has closed (the kernel says uid 0 for it; F3 of docs/security.md).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sockdiag.h"

#define NOBODY 65534

struct conn {
	int listener, client, server;
	struct sockaddr_storage peer, self; /* the accepted end's names */
};

static int listen_on(int family, const char *addr, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(ss, 0, sizeof(*ss));
	ss->ss_family = family;
	if (family == AF_INET)
		inet_pton(AF_INET, addr, &((struct sockaddr_in *)ss)->sin_addr);
	else
		inet_pton(AF_INET6, addr,
			  &((struct sockaddr_in6 *)ss)->sin6_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)ss, sizeof(*ss)) < 0 ||
	    listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)ss, &len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The port of @ss set into @to, an address of its family. */
static void with_port(struct sockaddr_storage *to,
		      const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6 && to->ss_family == AF_INET6)
		((struct sockaddr_in6 *)to)->sin6_port =
			((const struct sockaddr_in6 *)ss)->sin6_port;
	else if (to->ss_family == AF_INET6)
		((struct sockaddr_in6 *)to)->sin6_port =
			((const struct sockaddr_in *)ss)->sin_port;
	else
		((struct sockaddr_in *)to)->sin_port =
			((const struct sockaddr_in *)ss)->sin_port;
}

/* Connect to a listener on @listen_addr through @connect_addr (its port
 * filled in), as @uid if not -1 (in a child that then waits to be told to
 * go); accept.  The child's pid in *@ret_child. */
static int make_conn(struct conn *c, int lfamily, const char *listen_addr,
		     int cfamily, const char *connect_addr, int uid,
		     pid_t *ret_child, int *ret_go)
{
	struct sockaddr_storage ls, cs = {.ss_family = cfamily};
	socklen_t plen = sizeof(c->peer), slen = sizeof(c->self);
	int go[2];

	c->listener = listen_on(lfamily, listen_addr, &ls);
	if (c->listener < 0)
		return -1;
	if (cfamily == AF_INET)
		inet_pton(AF_INET, connect_addr,
			  &((struct sockaddr_in *)&cs)->sin_addr);
	else
		inet_pton(AF_INET6, connect_addr,
			  &((struct sockaddr_in6 *)&cs)->sin6_addr);
	with_port(&cs, &ls);
	c->client = -1;
	*ret_child = -1;
	if (uid >= 0) {
		if (pipe(go) < 0)
			return -1;
		*ret_child = fork();
		if (*ret_child == 0) {
			char b;
			int fd;

			/* A socket belongs to the uid that made it. */
			close(go[1]);
			if (setgid(uid) < 0 || setuid(uid) < 0)
				_exit(1);
			fd = socket(cfamily, SOCK_STREAM, 0);
			if (connect(fd, (struct sockaddr *)&cs, sizeof(cs)) < 0)
				_exit(1);
			_exit(read(go[0], &b, 1) < 0);
		}
		close(go[0]);
		*ret_go = go[1];
	} else {
		c->client = socket(cfamily, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(c->client, (struct sockaddr *)&cs, sizeof(cs)) < 0)
			return -1;
	}
	c->server = accept4(c->listener, NULL, NULL, SOCK_CLOEXEC);
	if (c->server < 0 ||
	    getpeername(c->server, (struct sockaddr *)&c->peer, &plen) < 0 ||
	    getsockname(c->server, (struct sockaddr *)&c->self, &slen) < 0)
		return -1;
	return 0;
}

static void close_conn(struct conn *c)
{
	if (c->client >= 0)
		close(c->client);
	close(c->server);
	close(c->listener);
}

static int owner(int nl, const struct sockaddr_storage *local,
		 const struct sockaddr_storage *remote, uid_t *ret_uid)
{
	return sockdiag_tcp_owner(nl, (const struct sockaddr *)local,
				  (const struct sockaddr *)remote, ret_uid);
}

static void test_own_connections(int nl)
{
	static const struct {
		int lfamily;
		const char *laddr;
		int cfamily;
		const char *caddr;
	} cases[] = {
		{AF_INET, "127.0.0.1", AF_INET, "127.0.0.1"},
		{AF_INET6, "::1", AF_INET6, "::1"},
		/* An IPv4 client of a dual-stack listener: v4-mapped names. */
		{AF_INET6, "::", AF_INET, "127.0.0.1"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn c;
		pid_t child;
		uid_t uid = (uid_t)-1;
		int r;

		if (make_conn(&c, cases[i].lfamily, cases[i].laddr,
			      cases[i].cfamily, cases[i].caddr, -1, &child,
			      NULL) < 0) {
			fprintf(stderr, "case %zu: no loopback (%s), skipped\n",
				i, strerror(errno));
			continue;
		}
		r = owner(nl, &c.peer, &c.self, &uid);
		CHECK(r == 0 && uid == geteuid(), "case %zu: %d uid %u", i, r,
		      uid);
		/* The accepted end is ours too, seen from the other side. */
		r = owner(nl, &c.self, &c.peer, &uid);
		CHECK(r == 0 && uid == geteuid(), "case %zu: %d", i, r);
		close_conn(&c);
	}
}

static void test_other_uid(int nl)
{
	struct conn c;
	pid_t child;
	int go, status, r;
	uid_t uid = 0;

	if (geteuid() != 0) {
		fprintf(stderr, "not root: another uid's socket not tried\n");
		return;
	}
	if (make_conn(&c, AF_INET, "127.0.0.1", AF_INET, "127.0.0.1", NOBODY,
		      &child, &go) < 0) {
		CHECK(0, "connection as %d: %s", NOBODY, strerror(errno));
		return;
	}
	r = owner(nl, &c.peer, &c.self, &uid);
	CHECK(r == 0 && uid == NOBODY, "%d uid %u", r, uid);
	close(go);
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close_conn(&c);
}

static void test_no_owner(int nl)
{
	struct sockaddr_storage nowhere, un = {.ss_family = AF_UNIX};
	struct conn c;
	pid_t child;
	uid_t uid;

	if (make_conn(&c, AF_INET, "127.0.0.1", AF_INET, "127.0.0.1", -1,
		      &child, NULL) < 0) {
		CHECK(0, "loopback: %s", strerror(errno));
		return;
	}
	/* A port nobody connected from. */
	nowhere = c.peer;
	((struct sockaddr_in *)&nowhere)->sin_port = htons(1);
	CHECK(owner(nl, &nowhere, &c.self, &uid) == -ENOENT);
	/* From that port to the listener: the listening socket would
	 * match, and must not be taken for a connection's. */
	CHECK(owner(nl, &c.self, &nowhere, &uid) == -ENOENT);
	CHECK(owner(nl, &c.peer, &un, &uid) == -EAFNOSUPPORT);
	close_conn(&c);
}

/* The client's end as it closes: owned while a process holds it, whatever
 * its state; nobody's once closed, though the kernel says uid 0. */
static void test_closing(int nl)
{
	static const struct {
		const char *what;
		bool server_first; /* the accepted end shuts first */
		int client;	   /* 0: holds it; 1: shuts; 2: closes */
		bool server_after; /* the accepted end shuts after */
		int want;
	} cases[] = {
		{"held, the server shut (CLOSE_WAIT)", true, 0, false, 0},
		{"shut for writing, held (FIN_WAIT2)", false, 1, false, 0},
		{"closed (FIN_WAIT2, orphaned)", false, 2, false, -ESRCH},
		{"closed, the server shut (TIME_WAIT)", false, 2, true, -ESRCH},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn c;
		pid_t child;
		uid_t uid = (uid_t)-1;
		int r;

		if (make_conn(&c, AF_INET, "127.0.0.1", AF_INET, "127.0.0.1",
			      -1, &child, NULL) < 0) {
			CHECK(0, "loopback: %s", strerror(errno));
			return;
		}
		if (cases[i].server_first)
			shutdown(c.server, SHUT_WR);
		if (cases[i].client == 1)
			shutdown(c.client, SHUT_WR);
		if (cases[i].client == 2) {
			close(c.client);
			c.client = -1;
		}
		usleep(10000);
		if (cases[i].server_after)
			shutdown(c.server, SHUT_WR);
		usleep(10000);
		r = owner(nl, &c.peer, &c.self, &uid);
		CHECK(r == cases[i].want && (r < 0 || uid == geteuid()),
		      "%s: %d uid %d", cases[i].what, r, (int)uid);
		close_conn(&c);
	}
}

int main(void)
{
	int nl = sockdiag_open();

	if (nl < 0) {
		fprintf(stderr, "no NETLINK_SOCK_DIAG here: %s\n",
			strerror(-nl));
		return 77;
	}
	test_own_connections(nl);
	test_other_uid(nl);
	test_no_owner(nl);
	test_closing(nl);
	close(nl);
	return failures ? 1 : 0;
}
