/* SPDX-License-Identifier: MIT */
/*
 * Following the daemon (PROTOCOL.md 8, "Gaps", and 9): of the frames a
 * subscriber receives, which it applies, which it skips, which make it
 * subscribe again and which are snapshot parts to collect.  The one copy
 * of that rule for the clients written in C: librdmad's device list
 * (libclient/list/sync.c) and rdmactl's monitor and wait (rdmactl/commands.c,
 * rdmactl/ready.c).  It decides and keeps the generation; the caller
 * keeps its list, sends Subscribe and collects the parts.  Built into
 * proto's static library with hidden visibility: nothing of it is
 * exported by librdmad.
 */
#ifndef RDMAD_FOLLOW_H
#define RDMAD_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "rdmad.pb-c.h"

enum follow_state {
	/* Not subscribed (no connection yet, or it is gone): no event
	 * applies. */
	FOLLOW_IDLE,
	/* Subscribe sent as @subscribe_seq, its snapshot not all in yet:
	 * every event is part of it. */
	FOLLOW_AWAITING,
	/* The list is at @generation: the next event applies. */
	FOLLOW_FOLLOWING,
};

enum follow_action {
	FOLLOW_IGNORE,	/* nothing for the follower (a late reply) */
	FOLLOW_SKIP,	/* an event the list has, or will get in a snapshot */
	FOLLOW_APPLY,	/* the next event: apply it, then follow_applied() */
	FOLLOW_RESYNC,	/* a gap or an unknown event type: Subscribe again */
	FOLLOW_PART,	/* a snapshot part, awaited or unsolicited: collect
			 * it, then follow_snapshot() once all are in */
	FOLLOW_REFUSED, /* the daemon refused our Subscribe */
};

/* All zeroes: idle, no list. */
struct follow {
	enum follow_state state;
	uint64_t subscribe_seq; /* AWAITING: the Subscribe's seq */
	uint64_t generation;	/* of the list; 0 before the first snapshot */
};

/* What to do with @frame; changes nothing. */
enum follow_action follow_frame(const struct follow *f,
				const Rdmad__Frame *frame);
/* Whether this build knows @type: one it does not is a reason to resync
 * (PROTOCOL.md 3), never an event to guess at. */
bool follow_event_known(Rdmad__EventType type);
/* Subscribe went out as @seq. */
void follow_subscribed(struct follow *f, uint64_t seq);
/* A whole snapshot at @generation, the reply to @seq (0: unsolicited),
 * became the list.  Returns whether it answered the awaited Subscribe.
 * A caller that collects its Subscribe's snapshot itself before it reads
 * any other frame (rdmactl) passes seq 0 from FOLLOW_IDLE. */
bool follow_snapshot(struct follow *f, uint64_t seq, uint64_t generation);
/* The event at @generation (FOLLOW_APPLY) is in the list. */
void follow_applied(struct follow *f, uint64_t generation);
/* The connection is gone: idle, the generation kept. */
void follow_stop(struct follow *f);

#endif
