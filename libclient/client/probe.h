/* SPDX-License-Identifier: MIT */
/*
 * The open probe (probe.c, PROTOCOL.md 8b): whether this process may
 * open a device, tried with ibv_open_device() once per life (identity
 * and incarnation) and remembered for the process.  Beside refresh.c,
 * which has libibverbs' list at hand; of the other libclient modules it
 * uses only report.h's rule of what a refusal is.  Not installed.
 */
#ifndef RDMAD_PROBE_H
#define RDMAD_PROBE_H

#include <stdbool.h>
#include <stdint.h>

struct ibv_device;

/* Lives remembered at most; past that, the one looked up least recently
 * is forgotten (and would be probed again). */
#define PROBE_MAX 1024

/*
 * Whether @device, the life @incarnation of @identity, refuses this
 * process: -EPERM or -EACCES when its open did, else 0 (it opened and
 * was closed at once, or failed for a reason that is no refusal, as a
 * device with no driver behind it does).  Only the first call for a life
 * opens it, and says so in *@ret_first; later ones give what it found.
 * Thread-safe; it never talks to the daemon.
 */
int probe_life(struct ibv_device *device, const char *identity,
	       uint64_t incarnation, bool *ret_first);

#endif
