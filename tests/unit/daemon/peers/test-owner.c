/* SPDX-License-Identifier: MIT */
/*
 * daemon/peers/owner.c: who a uid belongs to.  subuid(5) text as newuidmap
 * reads it; the file read again when it changes; and, as root, the
 * kernel's word on a real user namespace made by another user, nested
 * inside another as rootless containers nest them.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "owner.h"

static void test_parse(void)
{
	struct owner_range *r;
	size_t n;

	CHECK(owner_parse_subuid("root:100000:65536\n"
				 "# a comment\n"
				 "garbage\n"
				 "1000:200000:10\n"
				 "no-such-user-here:300000:5\n"
				 "1001:400000:0\n"
				 "1002:4294967290:10\n"
				 "1003:x:10\n",
				 &r, &n) == 0,
	      "parsed");
	CHECK(n == 2, "two ranges kept, the rest skipped: %zu", n);
	CHECK(owner_in(r, n, 100000) == 0 && owner_in(r, n, 165535) == 0,
	      "root's range is root's");
	CHECK(owner_in(r, n, 165536) == 165536, "past it: its own");
	CHECK(owner_in(r, n, 200009) == 1000 &&
		      owner_in(r, n, 200010) == 200010,
	      "a numeric owner");
	CHECK(owner_in(r, n, 300000) == 300000, "an unknown user owns nothing");
	CHECK(owner_in(r, n, 1000) == 1000, "a uid of no range: its own");
	free(r);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "write %s", path);
}

/* The file is read again when it changes (looked at once a second). */
static void test_reload(void)
{
	char path[] = "/tmp/test-owner-XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0, "mkstemp");
	close(fd);
	write_file(path, "4242:500000:100\n");
	setenv("RDMAD_SUBUID_FILE", path, 1);
	CHECK(owner_of_uid(500050) == 4242, "read: %u", owner_of_uid(500050));
	write_file(path, "4343:500000:100\n");
	sleep(2);
	CHECK(owner_of_uid(500050) == 4343, "read again: %u",
	      owner_of_uid(500050));
	unlink(path);
	sleep(2);
	CHECK(owner_of_uid(500050) == 500050, "gone: every uid its own");
	unsetenv("RDMAD_SUBUID_FILE");
	owner_of_uid(0); /* forget the test's file */
}

static void map_self(void)
{
	int fd = open("/proc/self/setgroups", O_WRONLY);

	if (fd >= 0) {
		(void)!write(fd, "deny", 4);
		close(fd);
	}
	fd = open("/proc/self/uid_map", O_WRONLY);
	if (fd >= 0) {
		(void)!write(fd, "0 65534 1", 9);
		close(fd);
	}
	fd = open("/proc/self/gid_map", O_WRONLY);
	if (fd >= 0) {
		(void)!write(fd, "0 65534 1", 9);
		close(fd);
	}
}

/* A child of uid 65534 in a user namespace it made, and one more inside
 * (its own uid mapped first, as a nested container's runtime does;
 * dumpable again after setresuid(), or its /proc/self is root's). */
static pid_t nested_child(int *ready)
{
	int p[2];
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0 ||
		    prctl(PR_SET_DUMPABLE, 1) < 0 || unshare(CLONE_NEWUSER) < 0)
			_exit(1);
		map_self();
		(void)!write(p[1], unshare(CLONE_NEWUSER) < 0 ? "n" : "y", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	*ready = p[0];
	return pid;
}

static void test_kernel(void)
{
	char path[64], c = 0;
	int ready, ns;
	pid_t pid;

	if (geteuid() != 0) {
		printf("SKIP: the kernel's owner needs root (a namespace of "
		       "another user's)\n");
		return;
	}
	pid = nested_child(&ready);
	CHECK(pid > 0, "fork");
	if (pid <= 0)
		return;
	if (read(ready, &c, 1) != 1 || c != 'y') {
		CHECK(c != 'n', "a nested user namespace");
		printf("SKIP: no user namespaces for uid 65534 here\n");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(ready);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(ns >= 0, "open %s: %s", path, strerror(errno));
	CHECK(owner_of(123456, ns) == 65534,
	      "the outermost namespace's maker: %u", owner_of(123456, ns));
	close(ns);
	ns = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	CHECK(owner_of(123456, ns) == 123456, "rdmad's own: the uid's own");
	CHECK(owner_of(123456, -1) == 123456, "unknown: the uid's own");
	close(ns);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(ready);
}

int main(void)
{
	test_parse();
	test_reload();
	test_kernel();
	printf("%s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
