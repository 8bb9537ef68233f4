/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the rdmad.conf parser: any bytes as a config file must
 * give either a valid config or -EINVAL with a "NAME:LINE: " message,
 * never a crash, a hang or an unterminated error string.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[CONFIG_ERROR_MAX];
	struct config cfg;
	unsigned int n;
	char *text;
	int r;

	/* config_load_string() takes a C string: stop at the first NUL. */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	r = config_load_string("fuzz.conf", text, &cfg, err, &n);
	if (r == 0 && n != 0)
		abort();
	if (r < 0 &&
	    (r != -EINVAL || n == 0 || strncmp(err, "fuzz.conf:", 10) != 0 ||
	     memchr(err, '\0', sizeof(err)) == NULL))
		abort();
	if (r == 0 && (cfg.max_clients < 1 || cfg.max_queue < 4 ||
		       cfg.socket_mode > 0777))
		abort();
	free(text);
	return 0;
}
