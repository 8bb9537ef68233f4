/* SPDX-License-Identifier: MIT */
/*
 * Who a client's connections and passed descriptors are charged to: its
 * owner, the user behind a uid.  A rootless user (podman, buildah, any
 * user namespace that newuidmap mapped) runs under the 65,536 subordinate
 * uids that /etc/subuid, root's file, gives it; each is one uid to the
 * kernel but all are that user's.  So every bound that would be per uid
 * is per owner:
 * - the kernel's word first: for a peer rdmad may look at, the user who
 *   made the outermost user namespace the peer is in (NS_GET_PARENT up
 *   to the one below rdmad's, then NS_GET_OWNER_UID), unless that is
 *   root (root hands ranges to many tenants: a Kubernetes pod's, podman's
 *   --userns=auto);
 * - then /etc/subuid: the user whose range holds the uid;
 * - else the uid itself.
 * The file is read at start and again when it changes (looked at no
 * more than once a second); $RDMAD_SUBUID_FILE names another.
 */
#ifndef RDMAD_OWNER_H
#define RDMAD_OWNER_H

#include <stddef.h>
#include <sys/types.h>

/* The owner of @uid by /etc/subuid, else @uid. */
uid_t owner_of_uid(uid_t uid);

/* The owner of @uid, a process in the user namespace @userns_fd (-1:
 * unknown): the kernel's word where it has one, else owner_of_uid(). */
uid_t owner_of(uid_t uid, int userns_fd);

/* One range of /etc/subuid: [first, first + count) belongs to owner. */
struct owner_range {
	uid_t owner;
	uid_t first;
	uid_t count;
};

/* Parse subuid(5) text ("name-or-uid:first:count" lines; names through
 * getpwnam()): the ranges, malloc'd, and how many; -errno.  Lines that
 * are malformed or name no user are skipped. */
int owner_parse_subuid(const char *text, struct owner_range **ret, size_t *n);

/* The owner of @uid in @ranges, or @uid. */
uid_t owner_in(const struct owner_range *ranges, size_t n, uid_t uid);

#endif
