#!/bin/sh
# SPDX-License-Identifier: MIT
# systemd-analyze verify on rdmad.service, rdmad.socket and
# rdmad-control.socket.  verify wants
# ExecStart= to exist, so it checks a copy that points at the rdmad of this
# build.  It only warns about unknown keys and exits 0, so any output at
# all counts as a failure here.
# usage: verify-units.sh BUILT_SERVICE SOCKET_UNIT RDMAD_BINARY [CONTROL_SOCKET_UNIT]
set -eu
# shellcheck source=tests/unit/units/systemd-verify.sh
. "$(dirname "$0")/systemd-verify.sh"
service=$1 socket=$2 rdmad=$3
control=${4:-$(dirname "$socket")/rdmad-control.socket}

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "SKIP: systemd-analyze not installed"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|^ExecStart=[^ ]*|ExecStart=$rdmad|" "$service" >"$tmp/rdmad.service"
cp "$socket" "$tmp/rdmad.socket"
cp "$control" "$tmp/rdmad-control.socket"
grep -q "^ExecStart=$rdmad --foreground" "$tmp/rdmad.service"

cd "$tmp"
systemd_verify_clean ./rdmad.socket ./rdmad-control.socket ./rdmad.service
echo "OK: rdmad.service, rdmad.socket and rdmad-control.socket verify cleanly"
