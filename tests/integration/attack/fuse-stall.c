/* SPDX-License-Identifier: MIT */
/*
 * fuse-stall DIR: a FUSE file system mounted at DIR that never answers a
 * LOOKUP of "infiniband", for the attack tests (tests/integration:
 * test_client_paths.py, N1).  Run it in a user and mount namespace of its own
 * (unshare -Urm): FUSE may be mounted there without any privilege on the host.
 * An attacker puts it under an overlayfs as the lower layer: overlayfs
 * looks names up in its lower layer with the credentials of whoever
 * mounted it, so FUSE's guard against callers other than the mounter
 * (no allow_other) does not stop a root process that walks into it, and
 * that process then sleeps in the kernel (state D, not killable) until
 * the request is answered or the connection aborted.
 *
 * It also holds one regular file, "flush", for the passed-descriptor
 * tests (test_passed_descriptors.py and the kernel suite): the
 * first FLUSH of it (a close() of a descriptor of it, by whoever closes
 * first) is never answered, and prints "stalled flush pid PID"; later
 * ones are answered.  A process that closes a descriptor someone passed
 * it sleeps there (state D once a signal came) until the connection goes.
 *
 * The root directory lists nothing: GETATTR of it answers, a LOOKUP of
 * any other name answers ENOENT.  Anything else answers ENOSYS.  After the
 * mount it prints "mounted CONN" (CONN: the connection's number, its directory
 * in /sys/fs/fuse/connections, which is the mount's minor device number) and
 * "stalled N pid PID" each time it holds back a LOOKUP of "infiniband" (PID:
 * the caller's, as the kernel tells FUSE).  It exits when stdin reaches EOF (or
 * on SIGTERM/SIGKILL): closing /dev/fuse aborts the connection, which releases
 * every process waiting in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#define STALL_NAME "infiniband"
#define FLUSH_NAME "flush"
#define FLUSH_INO 2

/* A request is at most max_write plus headers; the kernel wants room
 * for at least FUSE_MIN_READ_BUFFER (8 KiB). */
static char buf[1 << 20];

static int reply(int fd, uint64_t unique, int error, const void *body,
		 size_t size)
{
	struct fuse_out_header out = {
		.len = (uint32_t)(sizeof(out) + (error ? 0 : size)),
		.error = error,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{&out, sizeof(out)},
		{(void *)body, error ? 0 : size},
	};

	if (writev(fd, iov, error || !size ? 1 : 2) < 0 && errno != ENOENT) {
		/* ENOENT: the request was interrupted meanwhile. */
		perror("fuse-stall: writev");
		return -1;
	}
	return 0;
}

static void root_attr(struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = FUSE_ROOT_ID;
	a->mode = S_IFDIR | 0755;
	a->nlink = 2;
	a->blksize = 4096;
}

static void flush_attr(struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = FLUSH_INO;
	a->mode = S_IFREG | 0666;
	a->nlink = 1;
	a->blksize = 4096;
}

static int lookup_flush(int fd, const struct fuse_in_header *in)
{
	struct fuse_entry_out out = {
		.nodeid = FLUSH_INO, .entry_valid = 3600, .attr_valid = 3600};

	flush_attr(&out.attr);
	return reply(fd, in->unique, 0, &out, sizeof(out));
}

/* The first FLUSH of "flush" is held; the rest answered. */
static int flush(int fd, const struct fuse_in_header *in)
{
	static bool held;

	if (in->nodeid == FLUSH_INO && !held) {
		held = true;
		printf("stalled flush pid %u\n", in->pid);
		fflush(stdout);
		return 0;
	}
	return reply(fd, in->unique, 0, NULL, 0);
}

static int handle(int fd, const struct fuse_in_header *in, const char *arg,
		  unsigned int *stalled)
{
	switch (in->opcode) {
	case FUSE_INIT: {
		const struct fuse_init_in *init = (const void *)arg;
		struct fuse_init_out out = {
			.major = FUSE_KERNEL_VERSION,
			.minor = init->minor < FUSE_KERNEL_MINOR_VERSION
					 ? init->minor
					 : FUSE_KERNEL_MINOR_VERSION,
			.max_readahead = init->max_readahead,
			.max_write = 65536,
			.max_background = 16,
			.congestion_threshold = 12,
			.time_gran = 1,
		};

		if (init->major != FUSE_KERNEL_VERSION)
			return reply(fd, in->unique, -EPROTO, NULL, 0);
		return reply(fd, in->unique, 0, &out, sizeof(out));
	}
	case FUSE_GETATTR: {
		struct fuse_attr_out out = {0};

		if (in->nodeid == FLUSH_INO)
			flush_attr(&out.attr);
		else if (in->nodeid == FUSE_ROOT_ID)
			root_attr(&out.attr);
		else
			return reply(fd, in->unique, -ENOENT, NULL, 0);
		return reply(fd, in->unique, 0, &out, sizeof(out));
	}
	case FUSE_LOOKUP:
		if (strcmp(arg, STALL_NAME) == 0) {
			/* Never answered. */
			printf("stalled %u pid %u\n", ++*stalled, in->pid);
			fflush(stdout);
			return 0;
		}
		if (strcmp(arg, FLUSH_NAME) == 0)
			return lookup_flush(fd, in);
		return reply(fd, in->unique, -ENOENT, NULL, 0);
	case FUSE_OPEN:
	case FUSE_OPENDIR: {
		struct fuse_open_out out = {.fh = 1};

		return reply(fd, in->unique, 0, &out, sizeof(out));
	}
	case FUSE_READDIR:
	case FUSE_READDIRPLUS:
		return reply(fd, in->unique, 0, NULL, 0); /* end of directory */
	case FUSE_FLUSH:
		return flush(fd, in);
	case FUSE_RELEASEDIR:
	case FUSE_RELEASE:
	case FUSE_ACCESS:
		return reply(fd, in->unique, 0, NULL, 0);
	case FUSE_STATFS: {
		struct fuse_statfs_out out = {
			.st = {.bsize = 4096, .namelen = 255, .frsize = 4096}};

		return reply(fd, in->unique, 0, &out, sizeof(out));
	}
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		return 0; /* no reply; an interrupt changes nothing */
	case FUSE_DESTROY:
		return 1;
	default:
		return reply(fd, in->unique, -ENOSYS, NULL, 0);
	}
}

int main(int argc, char **argv)
{
	char opts[128];
	struct stat st;
	unsigned int stalled = 0;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: fuse-stall DIR\n");
		return 2;
	}
	signal(SIGCHLD, SIG_IGN);
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("fuse-stall: /dev/fuse");
		return 77;
	}
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
	if (mount("fuse-stall", argv[1], "fuse", MS_NOSUID | MS_NODEV, opts) <
	    0) {
		perror("fuse-stall: mount");
		return 77;
	}
	/* Exiting closes /dev/fuse, which aborts the connection. */
	for (;;) {
		struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
				      {.fd = 0, .events = POLLIN}};
		const struct fuse_in_header *in = (const void *)buf;
		ssize_t n;
		int r;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("fuse-stall: poll");
			return 1;
		}
		if (p[1].revents) {
			char c;

			if (read(0, &c, 1) <= 0)
				return 0; /* told to go */
		}
		if (!(p[0].revents & POLLIN)) {
			if (p[0].revents)
				return 0; /* unmounted or aborted */
			continue;
		}
		n = read(fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN ||
			    errno == ENOENT)
				continue;
			if (errno == ENODEV)
				return 0; /* aborted or unmounted */
			perror("fuse-stall: read");
			return 1;
		}
		if ((size_t)n < sizeof(*in) || in->len != (uint32_t)n)
			continue;
		buf[n < (ssize_t)sizeof(buf) ? n : n - 1] = '\0';
		r = handle(fd, in, buf + sizeof(*in), &stalled);
		if (r < 0)
			return 1;
		if (r > 0)
			return 0;
		/* The mount's device number names its connection in
		 * fusectl.  A stat of the mount waits for FUSE_INIT's
		 * answer and for this loop to answer its GETATTR: a child
		 * asks. */
		if (in->opcode == FUSE_INIT) {
			if (fork() == 0) {
				close(fd);
				if (stat(argv[1], &st) < 0) {
					perror("fuse-stall: stat");
					_exit(1);
				}
				printf("mounted %u\n", minor(st.st_dev));
				fflush(stdout);
				_exit(0);
			}
		}
	}
}
