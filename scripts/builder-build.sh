#!/bin/sh
# SPDX-License-Identifier: MIT
# Build rdmad's Debian packages with their test suite as a Debian builder
# (sbuild) does, and show that no VM was started:
#   ../shared/tools/fresh-machine.sh /var/tmp/fresh scripts/builder-build.sh
# As root, in a throw-away Debian 12 root (it installs packages, adds the
# user "builder" and a qemu-system-x86_64 in /usr/local/bin): installs the
# Build-Depends only (apt-get build-dep), then runs dpkg-buildpackage as
# builder with no network but lo (unshare -n) in a pid namespace of its
# own, where a ps loop looks for qemu every 0.2 s; the qemu-system-x86_64
# put first in PATH logs every call.  Prints the last lines of the build,
# the test counts and both witnesses; exits with dpkg-buildpackage's
# status, or 1 when qemu ran.
set -eu
[ "$(id -u)" -eq 0 ] || {
	echo "builder-build: as root, in a throw-away root" >&2
	exit 2
}
src=$(cd "$(dirname "$0")/.." && pwd)
log=/var/log/builder-build
mkdir -p "$log"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends build-essential dpkg-dev \
	debhelper fakeroot iproute2 procps util-linux >/dev/null
(cd "$src" && apt-get build-dep -y -q ./ >/dev/null)
id builder >/dev/null 2>&1 || useradd -m builder
rm -rf /home/builder/rdmad
cp -a "$src" /home/builder/rdmad
chown -R builder: /home/builder
printf '#!/bin/sh\necho "$0 $*" >>%s/qemu-calls\nexit 1\n' "$log" \
	>/usr/local/bin/qemu-system-x86_64
chmod 755 /usr/local/bin/qemu-system-x86_64
: >"$log/qemu-calls"
: >"$log/qemu-ps"
: >"$log/ps-counts"
chmod 666 "$log/qemu-calls"

# The pid namespace's own /proc: ps sees the build's processes only.
# --propagation unchanged: a chroot's / is no mount point to make private.
set +e
LOG=$log unshare -n -p -f -m --propagation unchanged sh -c '
	mount --make-rprivate /proc && mount -t proc proc /proc &&
		ip link set lo up || exit 1
	while :; do
		ps -eo pid,user,comm >"$LOG/ps-now"
		grep qemu "$LOG/ps-now" >>"$LOG/qemu-ps"
		wc -l <"$LOG/ps-now" >>"$LOG/ps-counts"
		sleep 0.2
	done &
	setpriv --reuid=builder --regid=builder --init-groups env -i \
		PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/builder \
		DEB_BUILD_OPTIONS=parallel=2 sh -c \
		"cd ~/rdmad && id && ip -br link && dpkg-buildpackage -us -uc -b"
	rc=$?
	kill $!
	exit $rc' >"$log/build.log" 2>&1
rc=$?
set -e
tail -3 "$log/build.log"
grep -E '^(Ok|Fail|Skipped):' "$log/build.log" || true
echo "dpkg-buildpackage as $(stat -c %U /home/builder/rdmad), no network: exit $rc"
echo "qemu-system-x86_64 called: $(wc -l <"$log/qemu-calls") times;" \
	"ps samples: $(wc -l <"$log/ps-counts") (up to" \
	"$(sort -n "$log/ps-counts" | tail -1) processes each);" \
	"processes named qemu: $(wc -l <"$log/qemu-ps")"
[ -s "$log/qemu-calls" ] || [ -s "$log/qemu-ps" ] && exit 1
exit $rc
