# SPDX-License-Identifier: MIT
"""Frames of PROTOCOL.md by hand, as a client in another language would
write them: protobuf's wire format for the few fields that the attack
tests (attacktb.py names them) and the real-kernel suite (tests/kernel)
send.  Each is Python source that runs in a process of its own
(`python3 -c SOURCE ARGS...`), so that it can run as another user, in
namespaces of its own, or in a guest."""

# The encoders; each script below starts with them.
PROTO = r'''
def varint(n):
    out = b""
    while True:
        b, n = n & 0x7f, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out
def field(num, body):
    return varint(num << 3 | 2) + varint(len(body)) + body
def number(num, v):
    return varint(num << 3) + varint(v)
def frame(seq, num, body):
    return number(1, 1) + number(2, seq) + field(num, body)
def scope(mntns, nodes):
    return number(1, mntns) + field(3, b"".join(varint(n) for n in nodes))
def hello(sc=None):
    return frame(1, 10, field(1, b"attack") + (field(3, sc) if sc else b""))
def get_status(seq, sc):
    return frame(seq, 12, field(1, sc))
def unusable(seq, name, incarnation):
    # error: sint32 EPERM (1), zigzag 2
    return frame(seq, 16, field(1, name.encode()) + number(2, incarnation)
                 + number(3, 2))
'''


# SOCK FILE: says Hello passing FILE's descriptor, prints "sent", then
# holds on (test_passed_descriptors.py: F1, T3).
PASS_FILE = PROTO + r'''
import os, socket, sys, time
path, victim = sys.argv[1], sys.argv[2]
fd = os.open(victim, os.O_RDONLY)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
socket.send_fds(s, [hello()], [fd])
# One write: fuse-stall shares this stdout and may say "stalled flush"
# at once (print() may write "sent" and its newline apart).
os.write(1, b"sent\n")
time.sleep(3600)
'''


# SOCK: says Hello, prints "welcome", then "eof" when its connection ends
# (test_passed_descriptors.py: T3).
WAIT_EOF = PROTO + r'''
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(hello())
_, fds, _, _ = socket.recv_fds(s, 65536, 4)
for fd in fds:
    os.close(fd)
print("welcome", flush=True)
try:
    while s.recv(65536):
        pass
except OSError:
    pass
print("eof", flush=True)
'''


# SOCK N: a client of another owner (a bystander): N times, connect
# (trying again while the listener's backlog is full, as rdmactl does),
# Hello, read the Welcome (or the end: refused), GetStatus, close.
# Prints "done OK REFUSED BUSY" (BUSY: connect() tries that found the
# backlog full), then, where some were refused, "why" and each step that
# failed with its error (connect:ECONNREFUSED, welcome:closed, ...).
BYSTANDER = PROTO + r'''
import errno, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
# Each connect and each answer within WAIT seconds (10, as rdmactl's
# default; a sanitizer build's slower rdmad is given more by the caller).
wait = float(sys.argv[3]) if len(sys.argv) > 3 else 10
ok = refused = busy = 0
def connect():
    # As rdmactl does: a listener whose backlog is full says EAGAIN at
    # once; try again, 1 ms then up to 50 ms apart, within WAIT.
    global busy
    pause, end = 0.001, time.monotonic() + wait
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(wait)
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            s.close()
            busy += 1
            if time.monotonic() > end:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
whys = set()
def why(e):
    if isinstance(e, TimeoutError):  # socket.timeout too
        return "timeout"
    if e.errno:
        return errno.errorcode.get(e.errno, str(e.errno))
    return str(e)
for i in range(n):
    s, step = None, "connect"
    try:
        s = connect()
        step = "hello"
        s.send(hello())
        step = "welcome"
        if not s.recv(65536):
            raise OSError("closed")
        step = "status"
        s.send(get_status(2, scope(0, [])))
        if not s.recv(65536):
            raise OSError("closed")
        ok += 1
    except OSError as e:
        refused += 1
        whys.add("%s:%s" % (step, why(e)))
    if s:
        s.close()
print("done %d %d %d%s" % (ok, refused, busy,
                           " why " + ",".join(sorted(whys)) if whys else ""),
      flush=True)
'''


# SOCK N: N AF_PACKET sockets (packet_release() waits for an RCU grace
# period, in state D) queued on one unix socket passed with Hello (it
# needs CAP_NET_RAW: run it in `unshare -Urn`).  Prints "sent N", or
# "SKIP: why" and exits 77 where no AF_PACKET socket can be made.
PACKET_ATTACK = PROTO + r'''
import os, resource, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close()
except OSError as e:
    print("SKIP: no AF_PACKET socket in a user namespace: %s" % e,
          flush=True)
    sys.exit(77)
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
left = n
while left:
    k = min(left, 253)
    socks = [socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
             for _ in range(k)]
    socket.send_fds(b, [b"x"], [x.fileno() for x in socks])
    for x in socks:
        x.close()
    left -= k
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
socket.send_fds(s, [hello()], [a.fileno()])
a.close()
print("sent %d" % n, flush=True)
time.sleep(3600)
'''


# lingering(srv, linger): a loopback TCP socket (accepted on the
# listening @srv) with SO_LINGER {1, @linger}, its send buffer full and a
# peer that never reads: its last close() waits @linger seconds, or until
# the peer goes.  Returns (peer, socket).
LINGERING = r'''
import socket, struct
def lingering(srv, linger):
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(srv.getsockname())
    held, _ = srv.accept()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                    struct.pack("ii", 1, linger))
    held.setblocking(False)
    try:
        while True:
            held.send(b"x" * 65536)
    except BlockingIOError:
        pass
    return slow, held
'''


# SOCK N SECS: N connections (test_inflight.py: O6-O8), each a junk datagram
# (rdmad reads it, a protocol error, and reads no more) and behind it a
# datagram carrying one loopback TCP socket with unsent data, a peer
# that never reads and SO_LINGER {1, 3600}: rdmad never receives that
# socket, so only the release of the connection lets go of it.  Prints
# "queued N"; then for SECS seconds opens connections that end with a
# datagram queued (admitted or refused) and closes them, and prints
# "flooded N".
QUEUED_LINGER = PROTO + LINGERING + r'''
import os, resource, signal, socket, struct, sys, time
path, n, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
# Where rdmad let go of a connection before this process closes the
# socket it queued there, this close is the last and would linger: a
# tick of its own ends that wait.
signal.signal(signal.SIGALRM, lambda *_: None)
signal.setitimer(signal.ITIMER_REAL, 0.02, 0.02)
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(4096)
keep = []
queued = 0
for _ in range(n):
    slow, h = lingering(srv, 3600)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
        s.send(b"\xff" * 8)
        socket.send_fds(s, [b"\xff" * 8], [h.fileno()])
        queued += 1
    except OSError:
        pass
    h.close()
    keep += [slow, s]
signal.setitimer(signal.ITIMER_REAL, 0)
print("queued %d" % queued, flush=True)
flooded = 0
end = time.monotonic() + secs
while time.monotonic() < end:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
        s.send(b"\xff" * 8)
        s.send(b"\xff" * 8)
        flooded += 1
    except OSError:
        pass
    s.close()
print("flooded %d" % flooded, flush=True)
time.sleep(3600)
'''


# SOCK SECS HOW (test_passed_descriptors.py, test_descriptor_table.py):
# a loopback TCP socket with SO_LINGER {1, SECS}, unsent data and a peer
# that never reads: its last close() waits SECS seconds.  HOW says how
# it reaches rdmad: "hello" with Hello; "after" with a request after
# Hello; "queued" queued behind Hello before rdmad read either; "dropped"
# queued behind three malformed datagrams, which make rdmad hang up
# without reading it.  Prints "sent" (or "refused: WHY" when the kernel
# refused the descriptor), then holds on.
# The lingering socket itself ("held"), lingering $linger seconds.
LINGER_SETUP = LINGERING + r'''
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
slow, held = lingering(srv, linger)
'''
LINGER = PROTO + r'''
import os, socket, struct, sys, time
path, linger, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
''' + LINGER_SETUP + r'''
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
try:
    if mode == "hello":
        socket.send_fds(s, [hello()], [held.fileno()])
    elif mode == "after":
        s.send(hello())
        s.recv(65536)
        socket.send_fds(s, [get_status(2, scope(0, []))], [held.fileno()])
    elif mode == "queued":
        s.send(hello())
        socket.send_fds(s, [get_status(2, scope(0, []))], [held.fileno()])
    elif mode == "dropped":
        for _ in range(3):
            s.send(b"\xff" * 8)
        socket.send_fds(s, [hello()], [held.fileno()])
    print("sent", flush=True)
except OSError as e:
    print("refused: %s" % e, flush=True)
held.close()
time.sleep(3600)
'''
