/* SPDX-License-Identifier: MIT */
/*
 * The tick: how a helper lets go of sockets without lingering.
 *
 * A TCP socket's last close with SO_LINGER and unsent data whose peer
 * never reads waits in sk_stream_wait_close() (net/core/stream.c) until
 * its linger time passes or a signal is pending; such a socket queued on
 * a unix socket is released, and waits, in whichever task drops the last
 * reference to that unix socket.  A helper that closes sockets keeps an
 * interval timer running while it closes (SIGALRM every CLOSER_TICK_US,
 * to a handler that does nothing, without SA_RESTART): no such wait lasts
 * longer than a tick, and the rest of that close(2)'s releases (run
 * before the signal is delivered, task_work_run() in get_signal()) see it
 * pending and do not wait at all.
 *
 * The helpers are the reaper's removers (remover.h) and its undertaker
 * (reaper.c).
 */
#ifndef RDMAD_CLOSER_H
#define RDMAD_CLOSER_H

#include <stdbool.h>

#define CLOSER_TICK_US 1000

/* In a helper process (after fork or clone, async-signal-safe): every
 * signal back to its default, SIGALRM to a handler that ends interruptible
 * waits, nothing blocked.  closer_tick(true) then starts the tick of
 * CLOSER_TICK_US, closer_tick(false) stops it. */
void closer_tick_init(void);
void closer_tick(bool on);

#endif
