#!/bin/sh
# SPDX-License-Identifier: MIT
# Configure (once) and build one meson build directory.
#   scripts/build.sh [BUILDDIR [meson setup options...]]
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
[ $# -gt 0 ] && shift
if [ -f "$dir/build.ninja" ]; then
	meson setup --reconfigure "$dir" "$@" >/dev/null
else
	meson setup "$dir" "$@"
fi
meson compile -C "$dir"
