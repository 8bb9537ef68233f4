/* SPDX-License-Identifier: MIT */
/*
 * The input format of the fuzz targets that play a peer sending several
 * datagrams (fuzz-assembly, fuzz-server): each datagram is a 16-bit
 * little-endian length and that many bytes; a length past the end takes
 * what is left.
 */
#ifndef RDMAD_FUZZ_DATAGRAMS_H
#define RDMAD_FUZZ_DATAGRAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The next datagram of *@data (*@size bytes left) in *ret, *ret_len;
 * false when none is left. */
static inline bool next_datagram(const uint8_t **data, size_t *size,
				 const uint8_t **ret, size_t *ret_len)
{
	size_t len;

	if (*size < 2)
		return false;
	len = (*data)[0] | (size_t)(*data)[1] << 8;
	*data += 2;
	*size -= 2;
	if (len > *size)
		len = *size;
	*ret = *data;
	*ret_len = len;
	*data += len;
	*size -= len;
	return true;
}

#endif
