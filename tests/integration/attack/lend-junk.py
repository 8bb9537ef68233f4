#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""lend-junk.py SOCKET: lend rdmad a NETLINK_RDMA socket of this network
namespace in Hello (PROTOCOL.md 8b; version 1, seq 1,
hello{client_name "rdmactl", scope{netns_socket true}}), keep a copy and
keep it full of the kernel's replies to requests of our own; print
"lent PID" once lent.  docs/security.md's F5:
tests/integration/test_tenants.py (TestCoTenantSocket) and the real-kernel
suite (tests/kernel, TestViews)."""
import os, socket, struct, sys, time
path = sys.argv[1]
nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 20)
nl.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
# RDMA_NLDEV_CMD_GET (RDMA_NL_NLDEV 5 << 10 | 1) of a device that is not
# there: an error reply queued for each.
req = struct.pack("=IHHII", 24, 5 << 10 | 1, 1, 1, 0) + \
    struct.pack("=HHI", 8, 1, 999999)
def fill():
    for _ in range(600):
        try:
            nl.send(req, socket.MSG_DONTWAIT)
        except OSError:
            return
fill()
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
hello = bytes.fromhex("08011001520d0a0772646d6163746c1a022001")
socket.send_fds(s, [hello], [nl.fileno()])
msg, fds, _, _ = socket.recv_fds(s, 65536, 4)
for fd in fds:
    os.close(fd)
print("lent %d" % os.getpid(), flush=True)
while True:
    fill()
    time.sleep(0.05)
