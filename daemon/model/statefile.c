/* SPDX-License-Identifier: MIT */
/* Whole-file replace and bounded read under the state directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "statefile.h"

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= n;
	}
	return 0;
}

int statefile_write(int dirfd, const char *name, const void *data, size_t len)
{
	char tmp[256];
	int fd, r;

	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	fd = openat(dirfd, tmp,
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		    0644);
	if (fd < 0)
		return -errno;
	r = write_all(fd, data, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	else
		fsync(dirfd); /* the rename itself; best effort */
	return r;
}

static int read_whole(int fd, size_t size, char **ret)
{
	char *buf = malloc(size + 1);
	size_t got = 0;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	while (got < size && (n = read(fd, buf + got, size - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return -errno;
		}
		got += n;
	}
	buf[got] = '\0';
	*ret = buf;
	return 0;
}

int statefile_read(int dirfd, const char *name, size_t max, char **ret)
{
	struct stat st;
	int fd, r;

	fd = openat(dirfd, name,
		    O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return errno == ELOOP ? -EBADMSG : -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EBADMSG;
	else if ((size_t)st.st_size > max)
		r = -EFBIG;
	else
		r = read_whole(fd, st.st_size, ret);
	close(fd);
	return r;
}
