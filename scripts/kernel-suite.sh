#!/bin/sh
# SPDX-License-Identifier: MIT
# The real-kernel suite (tests/kernel, meson suite "kernel"): a device's
# lives on Debian 12's 6.1 and Debian 13's 6.12 with rdma_rxe, each with and
# without udevd, each in a guest of scripts/rdma-kernel-vm.sh.  Installs what
# is needed, builds (build/), runs the four guests one after another and
# prints one line counted from the test cases of every guest:
#   real-kernel suite: N passed, N failed, N skipped
# A guest that cannot run here (no root, no qemu) is skipped with its
# reason; one that fails to boot or to report counts as a failure.  rdmad's
# log of each test stays in build/kernel-logs/.  As root.
set -u
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1
scripts/build.sh build >/dev/null || exit 1
rm -rf build/kernel-logs
meson test -C build --suite kernel --print-errorlogs "$@"
rc=$?
python3 - build/meson-logs/testlog.json <<'PY'
import json, re, sys
passed = failed = skipped = 0
reruns = []
for line in open(sys.argv[1]):
    t = json.loads(line)
    if ":kernel / " not in t.get("name", ""):  # meson's "PROJECT:SUITE / NAME"
        continue
    out = t.get("stdout", "") or ""
    if re.search(r"^kernel-suite: rerun: ", out, re.M):
        reruns.append(t["name"].split(" / ")[-1])
    m = re.findall(r"^kernel-suite: .*: (\d+) passed, (\d+) failed, "
                   r"(\d+) skipped$", out, re.M)
    if t.get("result") == "SKIP":
        skipped += 1
        print("%s: skipped: %s" % (t["name"], out.strip().splitlines()[-1:]))
    elif not m:
        failed += 1
        print("%s: no report from the guest (%s)" % (t["name"], t["result"]))
    else:
        p, f, s = (int(x) for x in m[-1])
        passed, failed, skipped = passed + p, failed + f, skipped + s
if reruns:
    print("real-kernel suite: run again after a guest kernel fault outside "
          "rdmad: %s" % ", ".join(reruns))
print("real-kernel suite: %d passed, %d failed, %d skipped"
      % (passed, failed, skipped))
PY
exit $rc
