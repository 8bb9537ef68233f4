/* SPDX-License-Identifier: MIT */
/*
 * The follower of PROTOCOL.md 8 and 9 (follow.h).  What each frame a
 * subscriber receives means, by state; "seq" is the frame's, S the
 * Subscribe's (tests/unit/proto/test-follow.c walks every row):
 *
 *   frame                        IDLE     AWAITING   FOLLOWING
 *   Event, seq 0                 skip     skip       by generation:
 *     <= generation                                    skip
 *     generation + 1, known type                       apply
 *     generation + 1, unknown                          resync
 *     > generation + 1 (a gap)                         resync
 *   Snapshot, seq 0 (9)          part     part       part
 *   Snapshot, seq S              ignore   part       ignore
 *   status != OK, seq S          ignore   refused    ignore
 *   anything else                ignore   ignore     ignore
 *
 * and the states its callers' reports enter:
 *
 *   follow_subscribed(S)                -> AWAITING
 *   whole snapshot, seq S, AWAITING     -> FOLLOWING
 *   whole snapshot, seq 0, AWAITING     -> AWAITING (the list is replaced;
 *                                          events still wait for S's)
 *   whole snapshot, IDLE or FOLLOWING   -> FOLLOWING
 *   connection gone                     -> IDLE
 *
 * An event type this build does not know resyncs rather than being
 * shown or skipped: its effect on the list is unknown, and the snapshot
 * that answers the new Subscribe has it (PROTOCOL.md 3).
 */
#include "follow.h"

bool follow_event_known(Rdmad__EventType type)
{
	switch (type) {
	case RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_RELEASED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_READY:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_UNREADY:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_EXPECTING:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVING:
		return true;
	case _RDMAD__EVENT_TYPE_IS_INT_SIZE:
		break;
	}
	return false;
}

static enum follow_action on_event(const struct follow *f,
				   const Rdmad__Event *event)
{
	if (f->state != FOLLOW_FOLLOWING || event->generation <= f->generation)
		return FOLLOW_SKIP;
	if (event->generation != f->generation + 1 ||
	    !follow_event_known(event->type))
		return FOLLOW_RESYNC;
	return FOLLOW_APPLY;
}

/* Whether @frame answers the Subscribe we wait for. */
static bool awaited(const struct follow *f, const Rdmad__Frame *frame)
{
	return f->state == FOLLOW_AWAITING && frame->seq != 0 &&
	       frame->seq == f->subscribe_seq;
}

enum follow_action follow_frame(const struct follow *f,
				const Rdmad__Frame *frame)
{
	if (awaited(f, frame) && frame->status != RDMAD__STATUS__STATUS_OK)
		return FOLLOW_REFUSED;
	if (frame->body_case == RDMAD__FRAME__BODY_SNAPSHOT &&
	    (frame->seq == 0 || awaited(f, frame)))
		return FOLLOW_PART;
	if (frame->body_case == RDMAD__FRAME__BODY_EVENT && frame->seq == 0)
		return on_event(f, frame->event);
	return FOLLOW_IGNORE;
}

void follow_subscribed(struct follow *f, uint64_t seq)
{
	f->state = FOLLOW_AWAITING;
	f->subscribe_seq = seq;
}

bool follow_snapshot(struct follow *f, uint64_t seq, uint64_t generation)
{
	bool answer = f->state == FOLLOW_AWAITING && seq != 0 &&
		      seq == f->subscribe_seq;

	f->generation = generation;
	if (answer || f->state != FOLLOW_AWAITING)
		f->state = FOLLOW_FOLLOWING;
	return answer;
}

void follow_applied(struct follow *f, uint64_t generation)
{
	f->generation = generation;
}

void follow_stop(struct follow *f)
{
	f->state = FOLLOW_IDLE;
	f->subscribe_seq = 0;
}
