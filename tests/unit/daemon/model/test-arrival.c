/* SPDX-License-Identifier: MIT */
/*
 * daemon/model/arrival.c: every row of its table, from every state, and the one
 * wait: its deadline, counted from entering the state, and the overdue
 * names it gives back.
 */
#include <stdio.h>
#include <string.h>

#include "arrival.h"
#include "check.h"

#define N ARRIVAL_NONE
#define R ARRIVAL_REGISTERING
#define A ARRIVAL_ANNOUNCED

/* The table at the top of arrival.c, row by row. */
static const struct row {
	enum arrival_state from;
	enum arrival_signal signal;
	enum arrival_state to;
	enum arrival_action action;
} rows[] = {
	{N, ARRIVAL_LOOK_NEW, R, ARRIVAL_HOLD},
	{N, ARRIVAL_KERNEL_ADDED, A, ARRIVAL_LOOK_NOW},
	{N, ARRIVAL_LOOK_KNOWN, N, ARRIVAL_APPLY},
	{N, ARRIVAL_LOOK_GONE, N, ARRIVAL_APPLY},
	{N, ARRIVAL_WAIT_OVER, N, ARRIVAL_LOOK},
	{R, ARRIVAL_LOOK_NEW, R, ARRIVAL_HOLD},
	{R, ARRIVAL_KERNEL_ADDED, A, ARRIVAL_LOOK_NOW},
	{R, ARRIVAL_LOOK_KNOWN, N, ARRIVAL_APPLY},
	{R, ARRIVAL_LOOK_GONE, N, ARRIVAL_APPLY},
	{R, ARRIVAL_WAIT_OVER, A, ARRIVAL_LOOK},
	{A, ARRIVAL_LOOK_NEW, N, ARRIVAL_APPLY},
	{A, ARRIVAL_KERNEL_ADDED, A, ARRIVAL_LOOK_NOW},
	{A, ARRIVAL_LOOK_KNOWN, N, ARRIVAL_APPLY},
	{A, ARRIVAL_LOOK_GONE, N, ARRIVAL_APPLY},
	{A, ARRIVAL_WAIT_OVER, N, ARRIVAL_LOOK},
};

/* Bring "dev" to @state. */
static void enter(struct arrival *a, enum arrival_state state)
{
	if (state == R)
		arrival_observe(a, "dev", ARRIVAL_LOOK_NEW, 0);
	if (state == A)
		arrival_observe(a, "dev", ARRIVAL_KERNEL_ADDED, 0);
}

static void test_rows(void)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct arrival *a = arrival_new();
		enum arrival_action action;

		enter(a, r->from);
		CHECK(arrival_state(a, "dev") == r->from, "row %zu: from %s", i,
		      arrival_state_name(arrival_state(a, "dev")));
		action = arrival_observe(a, "dev", r->signal, 10);
		CHECK(action == r->action && arrival_state(a, "dev") == r->to,
		      "row %zu: %s, then %d: %d to %s", i,
		      arrival_state_name(r->from), (int)r->signal, (int)action,
		      arrival_state_name(arrival_state(a, "dev")));
		CHECK(arrival_count(a) == (r->to != N), "row %zu: %zu kept", i,
		      arrival_count(a));
		CHECK(arrival_state(a, "other") == N, "row %zu: another name",
		      i);
		arrival_free(a);
	}
}

/* A held registration's wait ends ARRIVAL_WAIT_MS after the first look
 * that held it, whatever looks come after; the word ends it. */
static void test_wait(void)
{
	struct arrival *a = arrival_new();
	char name[RECORD_NAME_MAX];

	CHECK(arrival_next_deadline(a) == 0, "nothing waits");
	arrival_observe(a, "mlx5_0", ARRIVAL_LOOK_NEW, 1000);
	arrival_observe(a, "mlx5_0", ARRIVAL_LOOK_NEW, 1500);
	arrival_observe(a, "mlx5_1", ARRIVAL_LOOK_NEW, 1200);
	CHECK(arrival_next_deadline(a) == 1000 + ARRIVAL_WAIT_MS,
	      "deadline %llu", (unsigned long long)arrival_next_deadline(a));
	CHECK(!arrival_overdue(a, 1000 + ARRIVAL_WAIT_MS - 1, name),
	      "overdue early");
	CHECK(arrival_overdue(a, 1000 + ARRIVAL_WAIT_MS, name) &&
		      !strcmp(name, "mlx5_0"),
	      "overdue: %s", name);
	CHECK(arrival_observe(a, "mlx5_0", ARRIVAL_WAIT_OVER,
			      1000 + ARRIVAL_WAIT_MS) == ARRIVAL_LOOK &&
		      arrival_state(a, "mlx5_0") == A,
	      "its wait over: looked at as announced");
	CHECK(arrival_observe(a, "mlx5_0", ARRIVAL_LOOK_NEW, 3100) ==
			      ARRIVAL_APPLY &&
		      arrival_count(a) == 1,
	      "announced by that look");
	CHECK(arrival_observe(a, "mlx5_1", ARRIVAL_KERNEL_ADDED, 1300) ==
			      ARRIVAL_LOOK_NOW &&
		      arrival_observe(a, "mlx5_1", ARRIVAL_LOOK_NEW, 1310) ==
			      ARRIVAL_APPLY &&
		      arrival_count(a) == 0,
	      "the kernel's word, then its look");
	arrival_free(a);
}

/* A burst: every registration is held, however many, and each is
 * announced by its own word (no cap turns a burst into incomplete
 * announcements). */
static void test_burst(void)
{
	struct arrival *a = arrival_new();
	char name[RECORD_NAME_MAX];
	unsigned int applied = 0;

	for (int i = 0; i < 1024; i++) {
		snprintf(name, sizeof(name), "vf%d", i);
		CHECK(arrival_observe(a, name, ARRIVAL_LOOK_NEW, 0) ==
			      ARRIVAL_HOLD,
		      "%s held", name);
	}
	CHECK(arrival_count(a) == 1024, "%zu held", arrival_count(a));
	for (int i = 0; i < 1024; i++) {
		snprintf(name, sizeof(name), "vf%d", i);
		arrival_observe(a, name, ARRIVAL_KERNEL_ADDED, 5);
		applied += arrival_observe(a, name, ARRIVAL_LOOK_NEW, 6) ==
			   ARRIVAL_APPLY;
	}
	CHECK(applied == 1024 && arrival_count(a) == 0, "%u announced",
	      applied);
	arrival_free(a);
}

int main(void)
{
	test_rows();
	test_wait();
	test_burst();
	printf("%s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
