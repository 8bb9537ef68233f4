#!/bin/sh
# SPDX-License-Identifier: MIT
# The tree is formatted as .clang-format says (kernel style, as
# rdma-core's): lists each C file that clang-format would change, and exits
# 1 if any, 77 (skipped) when clang-format is not installed.  To fix:
#   scripts/check-format.sh --fix
# The tree reads the same to clang-format 14 and 19 (Debian 12's and 13's),
# and the check holds with either.  Where they differ the code is written
# so that both agree (an attribute on a prototype, not before a function's
# name; a named struct for a pointer member), or laid out by hand between
# clang-format off and on (a braced list in a macro, which 14 breaks into
# a block and 19 keeps whole).  With another major version the check still
# lists what that version would change, and then skips, saying so; --fix
# refuses to run with it.
set -u
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "SKIP: no clang-format"; exit 77; }
refs="14 19"
have=$(clang-format --version | sed -n 's/.*version \([0-9][0-9]*\).*/\1/p')
known() { case " $refs " in *" $have "*) return 0 ;; esac; return 1; }
files=$(find daemon libclient proto rdmactl tests bench -name '*.[ch]' | sort)
if [ "${1:-}" = --fix ]; then
	known || {
		echo "check-format: clang-format $have is none of $refs, which the tree follows (Debian 12's and 13's clang-format)" >&2
		exit 1
	}
	# shellcheck disable=SC2086
	exec clang-format -i $files
fi
# One clang-format for all files (one a file took minutes under load):
# --dry-run names every line it would change, -Werror makes that fail.
# shellcheck disable=SC2086
list=$(clang-format --dry-run -Werror $files 2>&1 |
	sed -n 's/^\([^ :]*\.[ch]\):[0-9]*:[0-9]*: error: .*/\1/p' | uniq)
bad=0
for f in $list; do
	echo "not formatted: $f (scripts/check-format.sh --fix)"
	bad=1
done
if [ "$bad" = 1 ] && ! known; then
	echo "SKIP: clang-format $have formats the files above otherwise; the tree follows clang-format $refs (Debian 12's and 13's)"
	exit 77
fi
exit $bad
