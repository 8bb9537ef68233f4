/* SPDX-License-Identifier: MIT */
/*
 * Small files under the state directory (the generation ceiling, the
 * identities of devices' lives): replaced whole through a temporary file,
 * fsync() and rename(), so a crash leaves the old or the new one, never
 * half of either; read back only when they are regular files of bounded
 * size, never through a symbolic link.
 */
#ifndef RDMAD_STATEFILE_H
#define RDMAD_STATEFILE_H

#include <stddef.h>

/* Replace @name under @dirfd with @len bytes of @data.  -errno. */
int statefile_write(int dirfd, const char *name, const void *data, size_t len);
/* @name's contents, NUL-terminated, malloc'd, in *ret; 0, -ENOENT when
 * there is none, -EFBIG past @max bytes, -EBADMSG when it is not a
 * regular file, else -errno. */
int statefile_read(int dirfd, const char *name, size_t max, char **ret);

#endif
