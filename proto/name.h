/* SPDX-License-Identifier: MIT */
/*
 * The one rule for a device name that comes from outside: an ib device,
 * uverbs device, port directory or net device name read from sysfs, a
 * uevent or netlink, or asked for by a client.  The daemon, librdmad and
 * rdmactl all apply this function, so a name one of them accepts is never
 * one another rejects.  Header-only so that the daemon's model, which
 * links nothing of the wire, can use it too.
 */
#ifndef RDMAD_NAME_H
#define RDMAD_NAME_H

#include <stdbool.h>
#include <stddef.h>

/* Longest name plus its NUL (the kernel's IB_DEVICE_NAME_MAX). */
#define RDMAD_NAME_MAX 64

/*
 * Is @s, of @len bytes, a name?  1 to RDMAD_NAME_MAX - 1 bytes of
 * printable ASCII other than space and '/', not starting with '.' (so
 * never "." or ".."); a NUL within @len is not.  Names end up in sysfs
 * paths, logs, terminals and protobuf strings (which must be UTF-8).
 */
static inline bool rdmad_name_valid(const char *s, size_t len)
{
	if (!s || len == 0 || len >= RDMAD_NAME_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c > '~' || c == '/')
			return false;
	}
	return true;
}

/* The same for a NUL-terminated string (NULL is not a name). */
static inline bool rdmad_name_valid_str(const char *s)
{
	size_t len = 0;

	if (!s)
		return false;
	while (len < RDMAD_NAME_MAX && s[len])
		len++;
	return rdmad_name_valid(s, len);
}

#endif
