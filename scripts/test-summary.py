#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Count meson test results from testlog.json files; print 'N passed, N failed, N skipped'."""
import json
import sys

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        failed += 1  # a build dir that never ran its tests is a failure
        continue
    for line in lines:
        result = json.loads(line).get("result")
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:
            failed += 1
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
