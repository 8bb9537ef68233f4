#!/bin/sh
# SPDX-License-Identifier: MIT
# systemd-analyze verify on rdmad-wait-online.service with the units it
# requires (rdmad.socket and rdmad-control.socket beside it, and
# rdmad.service that the sockets start).  As
# tests/unit/units/verify-units.sh: ExecStart= must exist, so the copies point
# at this build's binaries, and any output at all is a failure.
# usage: verify-wait-online.sh WAIT_ONLINE RDMAD_SERVICE SOCKET RDMACTL RDMAD
set -eu
# shellcheck source=tests/unit/units/systemd-verify.sh
. "$(dirname "$0")/../unit/units/systemd-verify.sh"
wait_online=$1 service=$2 socket=$3 rdmactl=$4 rdmad=$5

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "SKIP: systemd-analyze not installed"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|^ExecStart=[^ ]*|ExecStart=$rdmactl|" "$wait_online" \
	>"$tmp/rdmad-wait-online.service"
sed "s|^ExecStart=[^ ]*|ExecStart=$rdmad|" "$service" >"$tmp/rdmad.service"
cp "$socket" "$tmp/rdmad.socket"
cp "$(dirname "$socket")/rdmad-control.socket" "$tmp/rdmad-control.socket"
grep -q "^ExecStart=$rdmactl wait --ready --timeout 120$" \
	"$tmp/rdmad-wait-online.service"
grep -q "^Type=oneshot$" "$tmp/rdmad-wait-online.service"
grep -q "^RemainAfterExit=yes$" "$tmp/rdmad-wait-online.service"

cd "$tmp"
systemd_verify_clean ./rdmad.socket ./rdmad-control.socket ./rdmad.service \
	./rdmad-wait-online.service
echo "OK: rdmad-wait-online.service verifies cleanly"
