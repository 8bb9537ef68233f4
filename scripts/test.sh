#!/bin/sh
# SPDX-License-Identifier: MIT
# The README's test command: install what is needed, build three times
# (plain; AddressSanitizer + UndefinedBehaviorSanitizer with gcc; the same
# with clang), run the whole meson test suite in each, and print one
# summary line counted from meson's logs.  The real-kernel suite (qemu
# guests, as root) is scripts/kernel-suite.sh's.
set -u
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1

# umockdev's preload library comes before the sanitizer runtime in tests
# that run under umockdev-wrapper; tell ASan that is fine.
export ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

rc=0
scripts/build.sh build || exit 1
meson test -C build --no-suite kernel --print-errorlogs --num-processes 2 "$@" || rc=1
scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false || exit 1
meson test -C build-asan --no-suite kernel --print-errorlogs --num-processes 2 "$@" || rc=1

# The same sanitizers with clang: another compiler's instrumentation and
# warnings.  Its ASan runtime is a shared library here (-shared-libasan),
# so that the preloaded fork shim and the umockdev-wrapped children find
# the runtime they were built against; the rpath says where it lives.
asan_rt=$(dirname "$(clang -print-file-name=libclang_rt.asan-x86_64.so)")
CC=clang CXX=clang++ scripts/build.sh build-clang \
	-Db_sanitize=address,undefined -Db_lundef=false \
	"-Dc_link_args=-shared-libasan -Wl,-rpath,$asan_rt" \
	"-Dcpp_link_args=-shared-libasan -Wl,-rpath,$asan_rt" || exit 1
meson test -C build-clang --no-suite kernel --print-errorlogs --num-processes 2 "$@" || rc=1

scripts/test-summary.py build/meson-logs/testlog.json \
	build-asan/meson-logs/testlog.json build-clang/meson-logs/testlog.json
exit $rc
