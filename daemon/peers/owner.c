/* SPDX-License-Identifier: MIT */
/*
 * Who a uid belongs to (owner.h): the kernel's owner of a user namespace,
 * else /etc/subuid.  The subuid table is kept in this module, read
 * again when the file's inode, size or mtime changed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/nsfs.h>

#include "clock.h"
#include "owner.h"

#define SUBUID_FILE "/etc/subuid"
#define SUBUID_MAX_SIZE (1u << 20)
#define RECHECK_MS 1000

static struct {
	struct owner_range *ranges;
	size_t n;
	struct stat st; /* of what was read */
	uint64_t checked_ms;
	bool read;
} subuid;

/* ---- /etc/subuid ---- */

static bool parse_id(const char *s, uid_t *ret)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v >= UINT32_MAX)
		return false;
	*ret = (uid_t)v;
	return true;
}

static bool owner_named(const char *name, uid_t *ret)
{
	struct passwd *pw;

	if (parse_id(name, ret))
		return true;
	pw = getpwnam(name);
	if (!pw)
		return false;
	*ret = pw->pw_uid;
	return true;
}

/* One "name:first:count" line (NUL-terminated, no newline). */
static bool parse_line(char *line, struct owner_range *ret)
{
	char *first = strchr(line, ':'), *count;

	if (!first)
		return false;
	*first++ = '\0';
	count = strchr(first, ':');
	if (!count)
		return false;
	*count++ = '\0';
	return *line && parse_id(first, &ret->first) &&
	       parse_id(count, &ret->count) && ret->count > 0 &&
	       ret->first <= UINT32_MAX - ret->count &&
	       owner_named(line, &ret->owner);
}

int owner_parse_subuid(const char *text, struct owner_range **ret, size_t *n)
{
	struct owner_range *ranges = NULL, *more, r;
	size_t cap = 0, count = 0;
	char *copy = strdup(text), *line, *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (*line == '#' || !parse_line(line, &r))
			continue;
		if (count == cap) {
			cap = cap ? 2 * cap : 8;
			more = reallocarray(ranges, cap, sizeof(*more));
			if (!more) {
				free(ranges);
				free(copy);
				return -ENOMEM;
			}
			ranges = more;
		}
		ranges[count++] = r;
	}
	free(copy);
	*ret = ranges;
	*n = count;
	return 0;
}

uid_t owner_in(const struct owner_range *ranges, size_t n, uid_t uid)
{
	for (size_t i = 0; i < n; i++)
		if (uid >= ranges[i].first &&
		    uid - ranges[i].first < ranges[i].count)
			return ranges[i].owner;
	return uid;
}

static const char *subuid_path(void)
{
	const char *env = getenv("RDMAD_SUBUID_FILE");

	return env && *env ? env : SUBUID_FILE;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void load(int fd, const struct stat *st)
{
	char *text = malloc((size_t)st->st_size + 1);
	struct owner_range *ranges;
	ssize_t n = text ? pread(fd, text, (size_t)st->st_size, 0) : -1;
	size_t count;

	if (n < 0 ||
	    (text[n] = '\0', owner_parse_subuid(text, &ranges, &count) < 0)) {
		free(text);
		return; /* the last table stays */
	}
	free(text);
	free(subuid.ranges);
	subuid.ranges = ranges;
	subuid.n = count;
	subuid.st = *st;
	subuid.read = true;
}

/* Read the file again if it changed; at most once every RECHECK_MS. */
static void refresh(void)
{
	uint64_t now = clock_monotonic_ms();
	struct stat st;
	int fd;

	if (subuid.checked_ms && now - subuid.checked_ms < RECHECK_MS)
		return;
	subuid.checked_ms = now;
	fd = open(subuid_path(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		free(subuid.ranges);
		subuid.ranges = NULL;
		subuid.n = 0;
		subuid.read = false;
		return;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size < SUBUID_MAX_SIZE &&
	    !(subuid.read && same_file(&st, &subuid.st)))
		load(fd, &st);
	close(fd);
}

uid_t owner_of_uid(uid_t uid)
{
	refresh();
	return owner_in(subuid.ranges, subuid.n, uid);
}

/* ---- the kernel's word ---- */

static bool same_ns(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	       sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

/* Who made the outermost user namespace below rdmad's that @userns_fd
 * is in, or is: 0 and *@ret, -ENOENT when it is rdmad's own, -errno. */
static int outermost_owner(int userns_fd, uid_t *ret)
{
	int own = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	int cur = fcntl(userns_fd, F_DUPFD_CLOEXEC, 0), parent, r = -ENOENT;

	while (own >= 0 && cur >= 0 && !same_ns(cur, own)) {
		parent = ioctl(cur, NS_GET_PARENT);
		if (parent < 0 || same_ns(parent, own)) {
			/* cur is the outermost we may see. */
			r = ioctl(cur, NS_GET_OWNER_UID, ret) < 0 ? -errno : 0;
			if (parent >= 0)
				close(parent);
			break;
		}
		close(cur);
		cur = parent;
	}
	if (cur >= 0)
		close(cur);
	if (own >= 0)
		close(own);
	return r;
}

uid_t owner_of(uid_t uid, int userns_fd)
{
	uid_t owner;

	if (userns_fd >= 0 && outermost_owner(userns_fd, &owner) == 0 &&
	    owner != 0)
		return owner;
	return owner_of_uid(uid);
}
