/* SPDX-License-Identifier: MIT */
/*
 * Another network namespace's devices: see nstable.h.  Its sysfs is read
 * through "/proc/self/fd/N/root/sys", N being an O_PATH descriptor of the
 * client's /proc/PID, so a pid reused meanwhile is never read from.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nstable.h"
#include "sysfs.h"

static void on_event(void *userdata, enum devices_event event,
		     const struct device *dev, const char *old_name)
{
	struct nstable *t = userdata;

	if (t->fn)
		t->fn(t->userdata, t, event, dev, old_name);
}

struct nstable *nstable_new(const struct peer *peer, int proc_fd,
			    nstable_listener_fn fn, void *userdata)
{
	struct nstable *t = calloc(1, sizeof(*t));

	/* Its own generations are never published: views count theirs. */
	if (!t || !(t->table = devices_new(0))) {
		free(t);
		if (proc_fd >= 0)
			close(proc_fd);
		return NULL;
	}
	t->fn = fn;
	t->userdata = userdata;
	t->netns = peer->ns.net;
	t->proc_fd = proc_fd;
	memcpy(t->pod_uid, peer->pod_uid, sizeof(t->pod_uid));
	devices_set_listener(t->table, on_event, t);
	return t;
}

void nstable_free(struct nstable *t)
{
	if (!t)
		return;
	devices_apply_scan(t->table, NULL, 0);
	devices_free(t->table);
	if (t->proc_fd >= 0)
		close(t->proc_fd);
	free(t);
}

int nstable_rescan(struct nstable *t)
{
	struct sysfs_device *devs = NULL;
	char sysroot[64];
	size_t n = 0;
	int r;

	/* Its process gone: not known, not empty. */
	if (t->proc_fd < 0 || faccessat(t->proc_fd, "root/sys", F_OK, 0) < 0)
		return -ESRCH;
	snprintf(sysroot, sizeof(sysroot), "/proc/self/fd/%d/root/sys",
		 t->proc_fd);
	r = sysfs_scan_all(sysroot, &devs, &n, NULL);
	if (r == -ENOENT)
		n = 0; /* no RDMA class at all: no devices */
	else if (r < 0)
		return r;
	r = devices_apply_scan(t->table, devs, n);
	sysfs_devices_free(devs, n);
	return r;
}

const struct device *nstable_find_identity(const struct nstable *t,
					   const char *identity)
{
	const struct device *dev = devices_find_identity(t->table, identity);

	return dev && device_state(dev) == DEVICE_STATE_PRESENT ? dev : NULL;
}

bool nstable_netns_has_process(uint64_t netns)
{
	char path[64];
	struct dirent *e;
	struct stat st;
	bool found = false;
	DIR *proc = opendir("/proc");

	if (!proc)
		return true;
	/* A process we may not look at (another user's, without
	 * CAP_SYS_PTRACE) is taken as not in it. */
	while (!found && (e = readdir(proc))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/ns/net", e->d_name);
		found = stat(path, &st) == 0 && st.st_ino == netns;
	}
	closedir(proc);
	return found;
}

/* Is "net:[@netns]" the root of an nsfs mount in @mountinfo? */
static bool mounted_in(const char *mountinfo, uint64_t netns)
{
	char line[4096], want[48];
	bool found = false;
	FILE *f = fopen(mountinfo, "re");

	if (!f)
		return false;
	snprintf(want, sizeof(want), " net:[%llu] ", (unsigned long long)netns);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, want) && strstr(line, " - nsfs ");
	fclose(f);
	return found;
}

bool nstable_netns_is_mounted(uint64_t netns)
{
	return mounted_in("/proc/self/mountinfo", netns) ||
	       mounted_in("/proc/1/mountinfo", netns);
}

void nstable_drop(struct nstable *t, const struct device *dev)
{
	char name[SYSFS_NAME_MAX];

	snprintf(name, sizeof(name), "%s", device_info(dev)->name);
	devices_apply_one(t->table, name, NULL);
}
