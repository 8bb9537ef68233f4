/* SPDX-License-Identifier: MIT */
/*
 * Link-time fake of daemon/views/nlquery.c: another network namespace whose
 * devices a test scripts (fake_nlquery_set()), and sockets that fail
 * (fake_nlquery_fail(), told apart by inode, as a dup shares it), for the
 * views and their tables without a kernel that has RDMA netlink.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fake-nlquery.h"
#include "nlquery.h"

static struct device_record fake_devs[FAKE_NLQUERY_MAX];
static size_t fake_n;
static struct {
	ino_t ino;
	int err;
} failing[FAKE_NLQUERY_MAX];
static unsigned int calls;

static ino_t inode_of(int sock)
{
	struct stat st;

	return fstat(sock, &st) == 0 ? st.st_ino : 0;
}

/* Its place, or a free one (an entry answering again is free). */
void fake_nlquery_fail(int sock, int err)
{
	ino_t ino = inode_of(sock);
	size_t i, free_at = FAKE_NLQUERY_MAX;

	for (i = 0; i < FAKE_NLQUERY_MAX; i++) {
		if (failing[i].ino == ino)
			break;
		if (!failing[i].err && free_at == FAKE_NLQUERY_MAX)
			free_at = i;
	}
	if (i == FAKE_NLQUERY_MAX)
		i = free_at;
	if (i < FAKE_NLQUERY_MAX) {
		failing[i].ino = ino;
		failing[i].err = err;
	}
}

unsigned int fake_nlquery_calls(void)
{
	return calls;
}

static int failure_of(int sock)
{
	ino_t ino = inode_of(sock);

	for (size_t i = 0; i < FAKE_NLQUERY_MAX; i++)
		if (failing[i].err && failing[i].ino == ino)
			return failing[i].err;
	return 0;
}

void fake_nlquery_set(const struct device_record *devs, size_t n)
{
	fake_n = n < FAKE_NLQUERY_MAX ? n : FAKE_NLQUERY_MAX;
	if (fake_n)
		memcpy(fake_devs, devs, fake_n * sizeof(*devs));
}

int nlquery_check_socket(int sock, uint64_t *ret_netns_cookie)
{
	(void)sock;
	(void)ret_netns_cookie;
	return -EPROTOTYPE;
}

int nlquery_devices(int sock, struct device_record **ret, size_t *ret_n,
		    size_t max_devices)
{
	struct device_record *devs;
	int err = failure_of(sock);

	calls++;
	*ret = NULL;
	*ret_n = 0;
	if (err)
		return err;
	if (fake_n > max_devices)
		return -E2BIG;
	if (!fake_n)
		return 0;
	devs = calloc(fake_n, sizeof(*devs));
	if (!devs)
		return -ENOMEM;
	for (size_t i = 0; i < fake_n; i++)
		if (record_copy(&devs[i], &fake_devs[i]) < 0) {
			records_free(devs, i);
			return -ENOMEM;
		}
	*ret = devs;
	*ret_n = fake_n;
	return 0;
}
