#!/bin/sh
# SPDX-License-Identifier: MIT
# The README's test command: install what is needed, build three times
# (plain; AddressSanitizer + UndefinedBehaviorSanitizer with gcc; the same
# with clang), run the whole meson test suite in each, and print one
# summary line counted from meson's logs.  The real-kernel suite (qemu
# guests, as root) is scripts/kernel-suite.sh's.
#   scripts/test.sh [MESON-TEST-ARGS...]
# RDMAD_TEST_BUILDS names the builds to make and test, of "plain asan
# clang" (the default: all three); .ci/run runs the plain build's suite
# alone on one release where the time allows no more.
set -u
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1
# shellcheck disable=SC2086,SC2116
builds=$(echo ${RDMAD_TEST_BUILDS:-plain asan clang})
for b in $builds; do
	case $b in
	plain | asan | clang) ;;
	*)
		echo "test.sh: RDMAD_TEST_BUILDS: no build \"$b\" (plain, asan, clang)" >&2
		exit 2
		;;
	esac
done
want() { case " $builds " in *" $1 "*) ;; *) return 1 ;; esac; }

# umockdev's preload library comes before the sanitizer runtime in tests
# that run under umockdev-wrapper; tell ASan that is fine.
export ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

rc=0
logs=
if want plain; then
	scripts/build.sh build || exit 1
	meson test -C build --no-suite kernel --print-errorlogs --num-processes 2 "$@" || rc=1
	logs="$logs build/meson-logs/testlog.json"
fi
if want asan; then
	scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false || exit 1
	meson test -C build-asan --no-suite kernel --print-errorlogs --num-processes 2 "$@" || rc=1
	logs="$logs build-asan/meson-logs/testlog.json"
fi

if want clang; then
	# The same sanitizers with clang: another compiler's instrumentation and
	# warnings.  Its ASan runtime is a shared library here (-shared-libasan),
	# so that the preloaded fork shim and the umockdev-wrapped children find
	# the runtime they were built against; the rpath says where it lives.
	# Its name: libclang_rt.asan-x86_64.so in lib/linux (Debian's clang 14
	# and 19), libclang_rt.asan.so in a directory of the target's where
	# clang is built with per-target runtime directories.
	asan_rt=
	for n in libclang_rt.asan.so "libclang_rt.asan-$(uname -m).so"; do
		f=$(clang -print-file-name="$n")
		[ -f "$f" ] && asan_rt=$(dirname "$f") && break
	done
	[ -n "$asan_rt" ] || {
		echo "test.sh: clang has no shared ASan runtime (Debian: libclang-rt-N-dev for clang N)" >&2
		exit 1
	}
	CC=clang CXX=clang++ scripts/build.sh build-clang \
		-Db_sanitize=address,undefined -Db_lundef=false \
		"-Dc_link_args=-shared-libasan -Wl,-rpath,$asan_rt" \
		"-Dcpp_link_args=-shared-libasan -Wl,-rpath,$asan_rt" || exit 1
	meson test -C build-clang --no-suite kernel --print-errorlogs --num-processes 2 "$@" || rc=1
	logs="$logs build-clang/meson-logs/testlog.json"
fi

[ "$builds" = "plain asan clang" ] ||
	echo "test.sh: only the builds $builds (RDMAD_TEST_BUILDS)"
# shellcheck disable=SC2086
scripts/test-summary.py $logs
exit $rc
