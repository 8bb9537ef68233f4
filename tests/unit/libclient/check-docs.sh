#!/bin/sh
# SPDX-License-Identifier: MIT
# Every function librdmad exports is declared in rdmad.h, described in a
# man page, and reachable as "man FUNCTION" (a link in man/meson.build).
# usage: check-docs.sh SOURCE_ROOT
set -u
root=$1
fail=0
syms=$(sed -n 's/^[[:space:]]*\([a-z_][a-z0-9_]*\);$/\1/p' "$root/libclient/librdmad.map")
[ -n "$syms" ] || { echo "FAIL: no symbols read from librdmad.map"; exit 1; }
for s in $syms; do
	grep -q "\b$s(" "$root/libclient/base/rdmad.h" ||
		{ echo "FAIL: $s is not declared in rdmad.h"; fail=1; }
	cat "$root/man/librdmad.3" "$root/man/rdmad_fork_init.3" |
		grep -q "$s" ||
		{ echo "FAIL: $s is in no man page"; fail=1; }
	grep -q "'$s'" "$root/man/meson.build" ||
		{ echo "FAIL: man/meson.build has no link for $s"; fail=1; }
done
[ $fail = 0 ] && echo "OK: $(echo $syms | wc -w) exported functions declared, documented and linked"
exit $fail
