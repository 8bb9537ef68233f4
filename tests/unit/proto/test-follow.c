/* SPDX-License-Identifier: MIT */
/*
 * Unit test of proto/follow.c, the follower that librdmad's device list
 * and rdmactl's monitor and wait share: every row of its table (what a
 * frame means in each state) and every transition, as rows.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "follow.h"
#include "check.h"

#define S 7 /* the Subscribe's seq in every row */
#define UNKNOWN ((Rdmad__EventType)77)
#define ADDED RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED
#define REMOVING RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVING
#define OK RDMAD__STATUS__STATUS_OK
#define DENIED RDMAD__STATUS__STATUS_PERMISSION_DENIED
#define EVENT RDMAD__FRAME__BODY_EVENT
#define SNAPSHOT RDMAD__FRAME__BODY_SNAPSHOT
#define HOLD_REPLY RDMAD__FRAME__BODY__NOT_SET

/* A follower at generation 10 in @state; the frame; what it means. */
static const struct frame_row {
	const char *what;
	enum follow_state state;
	uint64_t seq;
	Rdmad__Frame__BodyCase body;
	Rdmad__Status status;
	uint64_t generation; /* of the event */
	Rdmad__EventType type;
	enum follow_action want;
} frame_rows[] = {
	{"next event", FOLLOW_FOLLOWING, 0, EVENT, OK, 11, ADDED, FOLLOW_APPLY},
	{"next event, newest known type", FOLLOW_FOLLOWING, 0, EVENT, OK, 11,
	 REMOVING, FOLLOW_APPLY},
	{"next event, unknown type", FOLLOW_FOLLOWING, 0, EVENT, OK, 11,
	 UNKNOWN, FOLLOW_RESYNC},
	{"old event, unknown type", FOLLOW_FOLLOWING, 0, EVENT, OK, 9, UNKNOWN,
	 FOLLOW_SKIP},
	{"same generation", FOLLOW_FOLLOWING, 0, EVENT, OK, 10, ADDED,
	 FOLLOW_SKIP},
	{"older generation", FOLLOW_FOLLOWING, 0, EVENT, OK, 3, ADDED,
	 FOLLOW_SKIP},
	{"gap", FOLLOW_FOLLOWING, 0, EVENT, OK, 12, ADDED, FOLLOW_RESYNC},
	{"event awaiting a snapshot", FOLLOW_AWAITING, 0, EVENT, OK, 11, ADDED,
	 FOLLOW_SKIP},
	{"gap awaiting a snapshot", FOLLOW_AWAITING, 0, EVENT, OK, 40, ADDED,
	 FOLLOW_SKIP},
	{"event while idle", FOLLOW_IDLE, 0, EVENT, OK, 11, ADDED, FOLLOW_SKIP},
	{"event with a seq", FOLLOW_FOLLOWING, S, EVENT, OK, 11, ADDED,
	 FOLLOW_IGNORE},
	{"unsolicited snapshot", FOLLOW_FOLLOWING, 0, SNAPSHOT, OK, 0, 0,
	 FOLLOW_PART},
	{"unsolicited, awaiting", FOLLOW_AWAITING, 0, SNAPSHOT, OK, 0, 0,
	 FOLLOW_PART},
	{"unsolicited, idle", FOLLOW_IDLE, 0, SNAPSHOT, OK, 0, 0, FOLLOW_PART},
	{"awaited snapshot", FOLLOW_AWAITING, S, SNAPSHOT, OK, 0, 0,
	 FOLLOW_PART},
	{"snapshot of another seq", FOLLOW_AWAITING, S + 1, SNAPSHOT, OK, 0, 0,
	 FOLLOW_IGNORE},
	{"late snapshot of S", FOLLOW_FOLLOWING, S, SNAPSHOT, OK, 0, 0,
	 FOLLOW_IGNORE},
	{"Subscribe refused", FOLLOW_AWAITING, S, HOLD_REPLY, DENIED, 0, 0,
	 FOLLOW_REFUSED},
	{"another request refused", FOLLOW_AWAITING, S + 1, HOLD_REPLY, DENIED,
	 0, 0, FOLLOW_IGNORE},
	{"late refusal of S", FOLLOW_FOLLOWING, S, HOLD_REPLY, DENIED, 0, 0,
	 FOLLOW_IGNORE},
	{"a reply", FOLLOW_FOLLOWING, S + 1, HOLD_REPLY, OK, 0, 0,
	 FOLLOW_IGNORE},
};

static void test_frames(void)
{
	for (size_t i = 0; i < sizeof(frame_rows) / sizeof(frame_rows[0]);
	     i++) {
		const struct frame_row *r = &frame_rows[i];
		struct follow f = {r->state, S, 10};
		Rdmad__Event ev = RDMAD__EVENT__INIT;
		Rdmad__Snapshot snap = RDMAD__SNAPSHOT__INIT;
		Rdmad__Frame frame = RDMAD__FRAME__INIT;
		enum follow_action got;

		frame.seq = r->seq;
		frame.status = r->status;
		frame.body_case = r->body;
		ev.generation = r->generation;
		ev.type = r->type;
		if (r->body == EVENT)
			frame.event = &ev;
		if (r->body == SNAPSHOT)
			frame.snapshot = &snap;
		got = follow_frame(&f, &frame);
		CHECK(got == r->want, "%s: %d, not %d", r->what, got, r->want);
		CHECK(f.state == r->state && f.generation == 10,
		      "%s: follow_frame() changed the follower", r->what);
	}
}

/* A whole snapshot of @seq taken in @state: the state entered and
 * whether it answered the Subscribe. */
static const struct snapshot_row {
	const char *what;
	enum follow_state state;
	uint64_t seq;
	enum follow_state want;
	bool answer;
} snapshot_rows[] = {
	{"awaited", FOLLOW_AWAITING, S, FOLLOW_FOLLOWING, true},
	{"unsolicited, awaiting", FOLLOW_AWAITING, 0, FOLLOW_AWAITING, false},
	{"unsolicited, following", FOLLOW_FOLLOWING, 0, FOLLOW_FOLLOWING,
	 false},
	{"collected by the caller", FOLLOW_IDLE, 0, FOLLOW_FOLLOWING, false},
};

static void test_snapshots(void)
{
	for (size_t i = 0; i < sizeof(snapshot_rows) / sizeof(snapshot_rows[0]);
	     i++) {
		const struct snapshot_row *r = &snapshot_rows[i];
		struct follow f = {r->state, S, 10};
		bool answer = follow_snapshot(&f, r->seq, 20);

		CHECK(f.state == r->want, "%s: state %d", r->what, f.state);
		CHECK(answer == r->answer, "%s: answer %d", r->what, answer);
		CHECK(f.generation == 20, "%s: generation %llu", r->what,
		      (unsigned long long)f.generation);
	}
}

/* A life: subscribe, the snapshot, an event, a gap, the connection. */
static void test_life(void)
{
	struct follow f = {0};
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	Rdmad__Frame frame = RDMAD__FRAME__INIT;

	frame.body_case = EVENT;
	frame.event = &ev;
	ev.generation = 1;
	CHECK(follow_frame(&f, &frame) == FOLLOW_SKIP, "idle at first");
	follow_subscribed(&f, S);
	CHECK(f.state == FOLLOW_AWAITING && f.subscribe_seq == S, "awaiting");
	CHECK(follow_snapshot(&f, S, 5), "the answer");
	ev.generation = 6;
	CHECK(follow_frame(&f, &frame) == FOLLOW_APPLY, "6 after 5");
	follow_applied(&f, 6);
	CHECK(f.generation == 6, "applied: %llu",
	      (unsigned long long)f.generation);
	CHECK(follow_frame(&f, &frame) == FOLLOW_SKIP, "6 again");
	follow_stop(&f);
	ev.generation = 7;
	CHECK(f.state == FOLLOW_IDLE && f.generation == 6, "stopped");
	CHECK(follow_frame(&f, &frame) == FOLLOW_SKIP, "7 after the end");
}

/* Every type the schema lists is known; none past it. */
static void test_known(void)
{
	const ProtobufCEnumDescriptor *d = &rdmad__event_type__descriptor;

	for (unsigned int i = 0; i < d->n_values; i++)
		CHECK(follow_event_known((Rdmad__EventType)d->values[i].value),
		      "%s", d->values[i].name);
	CHECK(!follow_event_known(UNKNOWN), "77");
	CHECK(!follow_event_known((Rdmad__EventType)-1), "-1");
}

int main(void)
{
	test_frames();
	test_snapshots();
	test_life();
	test_known();
	return failures ? 1 : 0;
}
