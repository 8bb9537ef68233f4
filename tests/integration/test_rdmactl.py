#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rdmactl's iproute2 habits against the real daemon: a device argument for
status and list, compact JSON by default and indented with -p, -V, and the
bash completion (rdmactl/rdmactl.bash) sourced in a real bash, completing
verbs, options and the device names the daemon lists."""
import json
import os
import subprocess

import rdmatb
from rdmatb import DaemonTest, rdmactl

COMPLETION = os.path.join(os.path.dirname(__file__), "..", "..", "rdmactl",
                          "rdmactl.bash")


def complete(*words, env=None):
    """COMPREPLY for the command line @words, the last one being the word
    under the cursor (possibly empty), as bash would call _rdmactl."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); '
              'COMP_CWORD=$(($# - 1)); _rdmactl; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    r = subprocess.run(["bash", "-c", script, "bash", COMPLETION,
                        rdmatb.RDMACTL] + list(words),
                       capture_output=True, text=True, env=env,
                       timeout=rdmatb.DEADLINE)
    if r.returncode != 0:
        raise AssertionError("completion failed: %s" % r.stderr)
    return sorted(w for w in r.stdout.split("\n") if w)


class TestRdmactl(DaemonTest):
    def setUp(self):
        super().setUp()
        self.tb.plug("mlx5_0", "mlx5-ib", ports=2)
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.tb.plug("irdma0", "irdma")
        self.start_daemon()

    def test_device_argument(self):
        st = rdmactl(self.sock, "status", "mlx5_1", "--json")
        self.assertEqual([d["name"] for d in st["devices"]], ["mlx5_1"])
        self.assertEqual(st["generation"], rdmatb.status(self.sock)["generation"])
        r = rdmactl(self.sock, "status", "irdma0")
        self.assertIn("hca_id:\tirdma0", r.stdout)
        self.assertNotIn("mlx5_0", r.stdout)
        self.assertEqual(rdmactl(self.sock, "list", "mlx5_0").stdout,
                         "mlx5_0\n")
        for verb in ("status", "list"):
            r = rdmactl(self.sock, verb, "mlx9_9", check=False)
            self.assertEqual(r.returncode, 1, r)
            self.assertEqual(r.stdout, "")
            self.assertEqual(
                r.stderr, "rdmactl: %s: no device 'mlx9_9' (rdmad at %s "
                "lists 3; see 'rdmactl list')\n" % (verb, self.sock))
        r = rdmactl(self.sock, "status", "mlx5_0", "mlx5_1", check=False)
        self.assertEqual(r.returncode, 2, r)

    def test_json_compact_and_pretty(self):
        def out(*args):
            return subprocess.run([rdmatb.RDMACTL, "--socket", self.sock]
                                  + list(args), capture_output=True,
                                  text=True, check=True,
                                  timeout=rdmatb.DEADLINE).stdout
        compact = out("status", "--json")
        self.assertEqual(compact.count("\n"), 1, compact[:200])
        pretty = out("-p", "status")
        self.assertGreater(pretty.count("\n"), 10)
        self.assertEqual(json.loads(pretty), json.loads(compact))
        self.assertEqual(json.loads(out("list", "-j", "-p")),
                         json.loads(out("list", "--json")))
        self.assertEqual(out("list", "--json").count("\n"), 1)

    def test_version(self):
        short = rdmactl(self.sock, "-V").stdout
        self.assertTrue(short.startswith("rdmactl "), short)
        self.assertEqual(short, rdmactl(self.sock, "--version").stdout)

    def test_completion_verbs_and_options(self):
        self.assertEqual(complete("st"), ["status"])
        self.assertEqual(complete("m"), ["monitor"])
        self.assertEqual(complete("--p"), ["--pretty"])
        self.assertEqual(complete("status", "--j"), ["--json"])
        # The same verbs as the table in parser.c, which --help prints.
        help_text = rdmactl(self.sock, "--help").stdout
        verbs = help_text.split("Verbs:\n")[1].split("\n\n")[0]
        self.assertEqual(complete(""),
                         sorted(line.split()[0] for line in verbs.splitlines()))

    def test_completion_device_names(self):
        """Device names come from the daemon on --socket or $RDMAD_SOCKET."""
        self.assertEqual(complete("--socket", self.sock, "status", "mlx"),
                         ["mlx5_0", "mlx5_1"])
        self.assertEqual(complete("--socket", self.sock, "list", ""),
                         ["irdma0", "mlx5_0", "mlx5_1"])
        env = dict(os.environ, RDMAD_SOCKET=self.sock)
        self.assertEqual(complete("-j", "status", "i", env=env), ["irdma0"])
        # One device only; monitor takes none; no daemon, no names.
        self.assertEqual(complete("--socket", self.sock, "status", "mlx5_0",
                                  ""), [])
        self.assertEqual(complete("--socket", self.sock, "monitor", ""), [])
        self.assertEqual(complete("--socket", "/nonexistent", "status", ""),
                         [])


if __name__ == "__main__":
    rdmatb.main()
