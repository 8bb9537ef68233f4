# SPDX-License-Identifier: MIT
# Sourced by verify-units.sh and verify-wait-online.sh: run
# `systemd-analyze verify` on the unit files given, and fail on an error
# or on any warning.  Run it in a scratch directory: its output goes to
# ./verify.out there.
# usage: systemd_verify_clean UNIT...
systemd_verify_clean() {
	if ! systemd-analyze verify --man=no "$@" >./verify.out 2>&1; then
		cat ./verify.out
		echo "FAIL: systemd-analyze verify exited non-zero"
		exit 1
	fi
	if [ -s ./verify.out ]; then
		cat ./verify.out
		echo "FAIL: systemd-analyze verify warned"
		exit 1
	fi
}
