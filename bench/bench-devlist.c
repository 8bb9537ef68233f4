/* SPDX-License-Identifier: MIT */
/*
 * bench-devlist: the cost of "give me the current device list" when
 * nothing changed.  librdmad's cached snapshot (rdmad_client_get_snapshot
 * + unref) and rdmad_client_get_generation against the baseline,
 * ibv_get_device_list() + ibv_free_device_list() on the same devices, in
 * one run.  Also checks which calls make a syscall, by trapping syscalls
 * with Syscall User Dispatch (Linux >= 5.11): the SIGSYS handler counts
 * the first syscall of a call, performs it and leaves the trap off until
 * the loop re-arms it for the next call (re-arming inside the handler
 * would trap its own rt_sigreturn).  The "syscall?" column is the share
 * of calls that made at least one syscall: 0.0 means none did.
 *
 * Needs a running rdmad with devices ($RDMAD_SOCKET; see
 * bench/run-bench-client.sh, which fakes 64 devices under umockdev).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "bench-util.h"
#include "rdmad.h"

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_ON 1
#define PR_SYS_DISPATCH_OFF 0
#endif
#define SELECTOR_ALLOW 0
#define SELECTOR_BLOCK 1

static struct rdmad_client *client;
static volatile char selector = SELECTOR_ALLOW;
static volatile unsigned long trapped;
static int dispatch_ok;

#ifdef __x86_64__
/* Count the trapped syscall, then make it for real with the trap off. */
static void on_sigsys(int sig, siginfo_t *info, void *ctx)
{
	greg_t *r = ((ucontext_t *)ctx)->uc_mcontext.gregs;

	(void)sig;
	selector = SELECTOR_ALLOW;
	trapped++;
	r[REG_RAX] = syscall(info->si_syscall, r[REG_RDI], r[REG_RSI],
			     r[REG_RDX], r[REG_R10], r[REG_R8], r[REG_R9]);
	if (r[REG_RAX] == -1)
		r[REG_RAX] = -errno;
}

static void dispatch_setup(void)
{
	struct sigaction sa = {.sa_sigaction = on_sigsys,
			       .sa_flags = SA_SIGINFO};

	sigaction(SIGSYS, &sa, NULL);
	dispatch_ok = prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0,
			    0, &selector) == 0;
}
#else
static void dispatch_setup(void)
{
}
#endif

static void op_snapshot(void)
{
	rdmad_snapshot_unref(rdmad_client_get_snapshot(client));
}

static volatile uint64_t sink;

static void op_generation(void)
{
	sink += rdmad_client_get_generation(client);
}

static void op_ibv(void)
{
	ibv_free_device_list(ibv_get_device_list(NULL));
}

static void op_refresh(void)
{
	ibv_free_device_list(ibv_refresh_device_list(NULL));
}

struct bench {
	const char *name;
	void (*op)(void);
	unsigned long iterations;
	double ns;
	double syscalls;
};

static void measure(struct bench *b)
{
	unsigned long i, calls = b->iterations < 1000 ? b->iterations : 1000;
	uint64_t start;

	b->op(); /* warm up */
	start = now_ns();
	for (i = 0; i < b->iterations; i++)
		b->op();
	b->ns = (double)(now_ns() - start) / (double)b->iterations;
	if (!dispatch_ok) {
		b->syscalls = -1;
		return;
	}
	/* Each call gets its own trap; a syscall disarms it until the next. */
	trapped = 0;
	for (i = 0; i < calls; i++) {
		selector = SELECTOR_BLOCK;
		b->op();
		selector = SELECTOR_ALLOW;
	}
	b->syscalls = (double)trapped / (double)calls;
}

int main(void)
{
	struct bench benches[] = {
		{"ibv_get_device_list+free (baseline)", op_ibv, 2000},
		{"rdmad_client_get_snapshot+unref", op_snapshot, 10000000},
		{"rdmad_client_get_generation", op_generation, 10000000},
		{"ibv_refresh_device_list+free", op_refresh, 2000},
	};
	size_t i, n = sizeof(benches) / sizeof(benches[0]);
	struct rdmad_snapshot *snap;
	int devices = 0;

	client = rdmad_client_new(NULL);
	if (!client || rdmad_client_connect(client) < 0) {
		fprintf(stderr, "bench-devlist: no rdmad at %s\n",
			client ? rdmad_client_get_socket_path(client) : "?");
		return 3;
	}
	snap = rdmad_client_get_snapshot(client);
	ibv_free_device_list(ibv_get_device_list(&devices));
	printf("devices: rdmad %zu, libibverbs %d\n",
	       rdmad_snapshot_get_count(snap), devices);
	rdmad_snapshot_unref(snap);
	dispatch_setup();
	for (i = 0; i < n; i++)
		measure(&benches[i]);
	printf("%-40s %12s %10s %12s\n", "operation", "ns/op", "syscall?",
	       "vs baseline");
	for (i = 0; i < n; i++) {
		char sys[32] = "n/a";

		if (benches[i].syscalls >= 0)
			snprintf(sys, sizeof(sys), "%.1f", benches[i].syscalls);
		printf("%-40s %12.1f %10s %11.0fx\n", benches[i].name,
		       benches[i].ns, sys, benches[0].ns / benches[i].ns);
	}
	printf("target: snapshot <= 50 ns/op and 0 syscalls: %s\n",
	       benches[1].ns <= 50 && benches[1].syscalls == 0 ? "met"
							       : "NOT met");
	rdmad_client_unref(client);
	return 0;
}
