/* SPDX-License-Identifier: MIT */
/*
 * client-fork NAME: hold NAME, fork; the child uses the same client
 * handle (which must open a connection of its own), holds NAME too and
 * exits; the parent then checks that its connection is the one it had
 * (same fd, still working) and that the daemon lists only the parent as
 * holder once the child is gone.  Prints "child ok", "parent ok" and
 * exits 0, or "fail WHAT".
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client-common.h"

static int fail(const char *what, int err)
{
	printf("fail %s %s\n", what, strerror(err < 0 ? -err : err));
	fflush(stdout);
	return 1;
}

static int child(struct rdmad_client *client, const char *name)
{
	struct rdmad_snapshot *snap = rdmad_client_get_snapshot(client);
	int err;

	if (!snap)
		return fail("child-snapshot", errno);
	rdmad_snapshot_unref(snap);
	/* The parent's hold is not the child's. */
	err = rdmad_client_hold(client, name);
	if (err < 0)
		return fail("child-hold", err);
	printf("child ok %d\n", getpid());
	fflush(stdout);
	return 0;
}

/* Whether the daemon lists exactly this process as NAME's holder. */
static int only_me(struct rdmad_client *client, const char *name)
{
	struct rdmad_snapshot *snap = rdmad_client_get_snapshot(client);
	const struct rdmad_device *dev = rdmad_snapshot_find_device(snap, name);
	pid_t pid = 0;
	int ok;

	rdmad_device_get_holder(dev, 0, &pid, NULL);
	ok = rdmad_device_get_holder_count(dev) == 1 && pid == getpid();
	rdmad_snapshot_unref(snap);
	return ok;
}

int main(int argc, char **argv)
{
	struct rdmad_client *client = rdmad_client_new(NULL);
	int fd, err, status, i;
	pid_t pid;

	if (!client || argc != 2)
		return 2;
	err = rdmad_client_hold(client, argv[1]);
	if (err < 0)
		return fail("hold", err);
	fd = rdmad_client_get_fd(client);
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(child(client, argv[1]));
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fail("child", ECHILD);
	for (i = 0; i < 60 && !only_me(client, argv[1]); i++) {
		rdmad_client_process(client);
		usleep(50000);
	}
	if (!only_me(client, argv[1]))
		return fail("holders", EBUSY);
	if (rdmad_client_get_fd(client) != fd)
		return fail("fd-changed", EBADF);
	if (rdmad_client_release(client, argv[1]) < 0)
		return fail("release", EIO);
	printf("parent ok %d\n", getpid());
	rdmad_client_unref(client);
	return 0;
}
