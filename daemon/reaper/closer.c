/* SPDX-License-Identifier: MIT */
/*
 * The tick (closer.h): an interval timer whose signal ends a helper's
 * interruptible waits in a close.
 */
#include <signal.h>
#include <stddef.h>
#include <sys/time.h>

#include "closer.h"

static void on_tick(int sig)
{
	(void)sig;
}

void closer_tick_init(void)
{
	struct sigaction sa = {.sa_handler = SIG_DFL};
	sigset_t none;

	/* rdmad's handlers are not for this process. */
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL);
	sa.sa_handler = on_tick; /* no SA_RESTART: waits end */
	sigaction(SIGALRM, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

void closer_tick(bool on)
{
	struct itimerval it = {0};

	if (on) {
		it.it_interval.tv_usec = CLOSER_TICK_US;
		it.it_value.tv_usec = CLOSER_TICK_US;
	}
	setitimer(ITIMER_REAL, &it, NULL);
}
