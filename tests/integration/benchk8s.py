# SPDX-License-Identifier: MIT
"""What bench/run-bench-k8s.sh and bench/run-bench-dra.sh share: children
whose stdout lines are timed as they arrive, waiting on such a queue, and
the latency table of plugs and unplugs beside rdmad-watch as the floor."""
import queue
import subprocess
import sys
import threading
import time

import rdmatb

name = "bench"  # the benchmark's, in its error messages


def lines(argv, stderr):
    """A child whose stdout lines go into a queue with their receipt time."""
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=stderr, text=True)
    q = queue.Queue()

    def read():
        for line in p.stdout:
            q.put((time.monotonic_ns(), line))
    threading.Thread(target=read, daemon=True).start()
    return p, q


def until(q, pred, what):
    """The first item of @q (time, item) that @pred takes."""
    deadline = time.monotonic() + rdmatb.DEADLINE
    while True:
        try:
            t, item = q.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            sys.exit("%s: no %s in %d s" % (name, what, rdmatb.DEADLINE))
        if pred(item):
            return t, item


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def table(res, after, whats, plugs, pause_ms):
    """@res["plug X"], @res["unplug X"] for X in "watch" and @whats: ms
    from the uevent, the watch the floor; @after: ms from rdmad's event."""
    print("%d plugs and unplugs, one device each, %d ms apart (ms from the "
          "uevent)" % (plugs, pause_ms))
    print("%-14s %9s %9s %9s  %s" % ("", "p50", "p99", "max", "p99 / floor"))
    for kind in ("plug", "unplug"):
        floor = pct(res[kind + " watch"], 99)
        for what in ("watch",) + tuple(whats):
            xs = res[kind + " " + what]
            print("%-14s %9.2f %9.2f %9.2f  %.2f" % (
                kind + " " + what, pct(xs, 50), pct(xs, 99), max(xs),
                pct(xs, 99) / floor))
    print("after rdmad's event (as rdmad-watch printed it):")
    for k, xs in after.items():
        print("%-14s %9.2f %9.2f %9.2f" % (k, pct(xs, 50), pct(xs, 99),
                                          max(xs)))
