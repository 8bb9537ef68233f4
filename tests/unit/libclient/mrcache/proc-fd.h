/* SPDX-License-Identifier: MIT */
/*
 * The lowest descriptor of this process whose /proc/self/fd link names
 * @needle (the userfaultfd, /proc/self/maps), as a program that closes
 * descriptors it did not open sees it; -1 when none does.
 */
#ifndef RDMAD_TEST_PROC_FD_H
#define RDMAD_TEST_PROC_FD_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline int fd_naming(const char *needle)
{
	char path[64], target[64];
	ssize_t n;
	int fd;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strstr(target, needle))
			return fd;
	}
	return -1;
}

#endif
