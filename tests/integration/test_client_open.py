#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rdmad_client_open_device() and rdmad_client_close_device() against the
real rdmad under umockdev: each opened context and the explicit hold are
uses of their own, and the daemon lists the process as a holder until the
last of them goes.  client-open fakes only libibverbs' open and close (no
kernel stands behind the fake devices); the library and the daemon are the
real ones.
"""
import queue
import subprocess
import threading
import unittest

from test_client import ClientTest, Lines, program


class Steps(Lines):
    """client-open with its stdin, to step it past each "wait"."""

    def __init__(self, args, env):
        self.proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def go(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return self.expect("waiting")

    def stop(self):
        self.proc.stdin.close()
        return super().stop()


class TestOpenDevice(ClientTest):
    def steps(self, *args):
        p = Steps([program("client-open")] + list(args), self.env())
        self.procs.append(p)
        p.expect("waiting")
        self.assertFalse([l for l in p.seen if l.startswith("error")],
                         p.seen)
        return p

    def held(self, p):
        return self.holders("mlx5_0") == [(p.proc.pid, "client-open")]

    def setUp(self):
        super().setUp()
        # client-open finds the device in libibverbs' own list first.
        self.require_verbs_fakes()
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()

    def test_two_opens_one_close_keeps_the_hold(self):
        p = self.steps("open", "mlx5_0", "open", "mlx5_0", "wait",
                       "close", "0", "wait", "close", "1", "wait")
        self.assertTrue(self.held(p))
        p.go()
        self.assertTrue(self.held(p), "one context still open")
        p.go()
        self.assertEqual(self.holders("mlx5_0"), [])

    def test_close_keeps_an_explicit_hold(self):
        p = self.steps("hold", "mlx5_0", "open", "mlx5_0", "close", "0",
                       "wait", "release", "mlx5_0", "wait")
        self.assertTrue(self.held(p), "rdmad_client_hold() still holds")
        p.go()
        self.assertEqual(self.holders("mlx5_0"), [])

    def test_release_keeps_an_open_context_held(self):
        p = self.steps("open", "mlx5_0", "hold", "mlx5_0", "release",
                       "mlx5_0", "wait", "close", "0", "wait")
        self.assertTrue(self.held(p), "the open context still holds")
        p.go()
        self.assertEqual(self.holders("mlx5_0"), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
