#!/bin/sh
# SPDX-License-Identifier: MIT
# The tree is formatted as .clang-format says (kernel style, as
# rdma-core's): lists each C file that clang-format would change, and exits
# 1 if any, 77 (skipped) when clang-format is not installed.  To fix:
#   scripts/check-format.sh --fix
set -u
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "SKIP: no clang-format"; exit 77; }
files=$(find daemon libclient proto rdmactl tests bench -name '*.[ch]' | sort)
if [ "${1:-}" = --fix ]; then
	# shellcheck disable=SC2086
	exec clang-format -i $files
fi
bad=0
for f in $files; do
	if ! clang-format "$f" | cmp -s - "$f"; then
		echo "not formatted: $f (scripts/check-format.sh --fix)"
		bad=1
	fi
done
exit $bad
