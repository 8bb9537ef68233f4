// SPDX-License-Identifier: MIT

package rdmad

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// mkdev is glibc's makedev(): Linux's dev_t of major, minor.
func mkdev(major, minor uint64) uint64 {
	return (major&0xfff)<<8 | (major&^uint64(0xfff))<<32 |
		minor&0xff | (minor&^uint64(0xff))<<12
}

func TestDevnum(t *testing.T) {
	for _, c := range []struct{ major, minor uint64 }{
		{0, 0}, {1, 3}, {231, 192}, {10, 0xff}, {10, 0x100},
		{0xfff, 0xfffff}, {0x1000, 0x100000}, {0xfffff000, 0xffffff00},
		{0xffffffff, 0xffffffff},
	} {
		if got := devnum(mkdev(c.major, c.minor)); got != c.major<<32|c.minor {
			t.Errorf("devnum(makedev(%#x, %#x)) = %#x", c.major, c.minor, got)
		}
	}
}

func stat(t *testing.T, path string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Skipf("stat %s: %v", path, err)
	}
	return &st
}

func sorted(v []uint64) []uint64 {
	v = append([]uint64(nil), v...)
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v
}

// fakeDevDir is a /dev/infiniband of links to /dev/null and /dev/zero
// (character devices anyone can reach; making one needs CAP_MKNOD) beside
// what must not count; it returns the dir and the nodes to expect.
func fakeDevDir(t *testing.T) (string, []uint64) {
	t.Helper()
	null, zero := stat(t, "/dev/null"), stat(t, "/dev/zero")
	if null.Mode&syscall.S_IFMT != syscall.S_IFCHR ||
		zero.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		t.Skip("/dev/null or /dev/zero is not a character device here")
	}
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("/dev/null", filepath.Join(dir, "uverbs0")))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "uverbs1")))
	// Followed, not reported as links: a link of a link counts too.
	must(os.Symlink("uverbs0", filepath.Join(dir, "rdma_cm")))
	// Not character devices, or not there: left out.
	must(os.WriteFile(filepath.Join(dir, "plain"), nil, 0o644))
	must(os.Mkdir(filepath.Join(dir, "by-path"), 0o755))
	must(os.Symlink("plain", filepath.Join(dir, "to-plain")))
	must(os.Symlink("by-path", filepath.Join(dir, "to-dir")))
	must(os.Symlink("nowhere", filepath.Join(dir, "dangling")))
	// A hidden entry is skipped, as scope_collect() does.
	must(os.Symlink("/dev/null", filepath.Join(dir, ".hidden")))
	n, z := devnum(uint64(null.Rdev)), devnum(uint64(zero.Rdev))
	return dir, sorted([]uint64{n, n, z})
}

func wantMntns(t *testing.T) uint64 {
	var st syscall.Stat_t
	if syscall.Stat("/proc/self/ns/mnt", &st) != nil {
		return 0
	}
	return st.Ino
}

func TestCollectScope(t *testing.T) {
	dir, want := fakeDevDir(t)
	s := collectScope(dir)
	if got := sorted(s.GetNodes()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("nodes %#x, want %#x", got, want)
	}
	if want := devnum(uint64(stat(t, dir).Dev)); s.GetDevDir() != want ||
		want == 0 {
		t.Errorf("dev_dir %#x, want %#x", s.GetDevDir(), want)
	}
	if s.GetMntns() != wantMntns(t) {
		t.Errorf("mntns %d, want %d", s.GetMntns(), wantMntns(t))
	}
	if s.GetNetnsSocket() {
		t.Error("netns_socket set by collectScope")
	}
	// A /dev/infiniband that is a link to the directory is followed.
	link := filepath.Join(t.TempDir(), "infiniband")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if l := collectScope(link); !proto.Equal(l, s) {
		t.Errorf("through a link: %v, want %v", l, s)
	}
}

func TestCollectScopeNoDir(t *testing.T) {
	// None: the file system of its parent (/dev) stands for it, where the
	// nodes to come will be.
	parent := t.TempDir()
	var st syscall.Stat_t
	if err := syscall.Stat(parent, &st); err != nil {
		t.Fatal(err)
	}
	s := collectScope(filepath.Join(parent, "infiniband"))
	if s.GetDevDir() != devnum(uint64(st.Dev)) || len(s.GetNodes()) != 0 ||
		s.GetMntns() != wantMntns(t) {
		t.Errorf("none: %v", s)
	}
	// Not a directory: nothing.
	s = collectScope("/dev/null")
	if s.GetDevDir() != 0 || len(s.GetNodes()) != 0 ||
		s.GetMntns() != wantMntns(t) {
		t.Errorf("/dev/null: %v", s)
	}
}

func TestCollectScopeAtMost256(t *testing.T) {
	null := stat(t, "/dev/null")
	dir := t.TempDir()
	for i := 0; i < maxScopeNodes+44; i++ {
		err := os.Symlink("/dev/null",
			filepath.Join(dir, fmt.Sprintf("uverbs%d", i)))
		if err != nil {
			t.Fatal(err)
		}
	}
	s := collectScope(dir)
	if len(s.GetNodes()) != maxScopeNodes {
		t.Fatalf("%d nodes, want %d", len(s.GetNodes()), maxScopeNodes)
	}
	for _, n := range s.GetNodes() {
		if n != devnum(uint64(null.Rdev)) {
			t.Fatalf("node %#x", n)
		}
	}
	// The most a Hello says still fits in a request.
	b, err := proto.Marshal(&rdmadpb.Frame{Version: Version, Seq: 1<<63 - 1,
		Body: &rdmadpb.Frame_Hello{Hello: &rdmadpb.Hello{
			ClientName: string(make([]byte, 255)),
			Features:   []string{FeatureLifecycle, FeatureRemoving},
			Scope: &rdmadpb.Scope{Mntns: ^uint64(0), DevDir: ^uint64(0),
				Nodes: make256(^uint64(0)), NetnsSocket: true}}}})
	if err != nil || len(b) > maxRequest {
		t.Errorf("largest Hello: %d bytes, %v", len(b), err)
	}
}

func make256(v uint64) []uint64 {
	out := make([]uint64, maxScopeNodes)
	for i := range out {
		out[i] = v
	}
	return out
}

// recvFD is the next request and the descriptor that came with it (-1:
// none); nil at the client's close.
func (p *peer) recvFD() (*rdmadpb.Frame, int) {
	buf := make([]byte, maxRequest)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	p.c.SetReadDeadline(time.Now().Add(deadline))
	n, oobn, _, _, err := p.c.ReadMsgUnix(buf, oob)
	fd := -1
	if err == nil && oobn > 0 {
		fd = takeDescriptor(oob[:oobn])
	}
	if err != nil || n == 0 {
		return nil, fd
	}
	f := &rdmadpb.Frame{}
	if err := proto.Unmarshal(buf[:n], f); err != nil {
		p.t.Errorf("fake daemon: undecodable request: %v", err)
		return nil, fd
	}
	return f, fd
}

// Hello carries the Scope and, where RDMA netlink exists, a NETLINK_RDMA
// socket; Subscribe and GetStatus carry the Scope looked at again.
func TestScopeSent(t *testing.T) {
	dir, want := fakeDevDir(t)
	old := scopeDevDir
	scopeDevDir = dir
	t.Cleanup(func() { scopeDevDir = old })
	canSocket := false
	if fd := netnsSocket(); fd >= 0 {
		canSocket = true
		syscall.Close(fd)
	}
	check := func(p *peer, what string, s *rdmadpb.Scope) {
		if s == nil {
			p.t.Errorf("%s: no scope", what)
			return
		}
		if got := sorted(s.GetNodes()); fmt.Sprint(got) != fmt.Sprint(want) {
			p.t.Errorf("%s: nodes %#x, want %#x", what, got, want)
		}
		if s.GetMntns() != wantMntns(t) || s.GetDevDir() == 0 {
			p.t.Errorf("%s: %v", what, s)
		}
	}
	d := newFake(t)
	done := d.serve(func(p *peer) {
		f, fd := p.recvFD()
		h := f.GetHello()
		check(p, "hello", h.GetScope())
		if h.GetScope().GetNetnsSocket() != canSocket || (fd >= 0) != canSocket {
			p.t.Errorf("hello: netns_socket %v, descriptor %d, "+
				"RDMA netlink here: %v", h.GetScope().GetNetnsSocket(),
				fd, canSocket)
		}
		if fd >= 0 {
			dom, err1 := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET,
				syscall.SO_DOMAIN)
			prot, err2 := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET,
				syscall.SO_PROTOCOL)
			if err1 != nil || err2 != nil || dom != syscall.AF_NETLINK ||
				prot != netlinkRDMA {
				p.t.Errorf("passed socket: domain %d protocol %d (%v %v)",
					dom, prot, err1, err2)
			}
			syscall.Close(fd)
		}
		p.send(&rdmadpb.Frame{Seq: f.GetSeq(), Body: &rdmadpb.Frame_Welcome{
			Welcome: &rdmadpb.Welcome{Version: 1, Generation: 1}}})
		f, fd = p.recvFD()
		if fd >= 0 || f.GetSubscribe() == nil {
			p.t.Errorf("expected Subscribe without a descriptor: %v %d", f, fd)
		}
		check(p, "subscribe", f.GetSubscribe().GetScope())
		if f.GetSubscribe().GetScope().GetNetnsSocket() {
			p.t.Error("subscribe: netns_socket")
		}
		p.snapshot(f.GetSeq(), 1, nil)
		f, fd = p.recvFD()
		if fd >= 0 || f.GetGetStatus_() == nil {
			p.t.Errorf("expected GetStatus without a descriptor: %v %d", f, fd)
		}
		check(p, "get_status", f.GetGetStatus_().GetScope())
		p.snapshot(f.GetSeq(), 1, nil)
		p.recv()
	})
	ctx := testContext(t)
	c := dial(t, d)
	if _, err := c.Subscribe(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	wait(t, done)
}

// WithoutScope sends none, and no descriptor.
func TestWithoutScope(t *testing.T) {
	d := newFake(t)
	done := d.serve(func(p *peer) {
		f, fd := p.recvFD()
		if f.GetHello() == nil || f.GetHello().GetScope() != nil || fd >= 0 {
			p.t.Errorf("hello: %v, descriptor %d", f, fd)
		}
		if fd >= 0 {
			syscall.Close(fd)
		}
		p.send(&rdmadpb.Frame{Seq: f.GetSeq(), Body: &rdmadpb.Frame_Welcome{
			Welcome: &rdmadpb.Welcome{Version: 1, Generation: 1}}})
		f = p.expect("Subscribe", isSubscribe)
		if f.GetSubscribe().GetScope() != nil {
			p.t.Errorf("subscribe: %v", f)
		}
		p.snapshot(f.GetSeq(), 1, nil)
		f = p.expect("GetStatus", isGetStatus)
		if f.GetGetStatus_().GetScope() != nil {
			p.t.Errorf("get_status: %v", f)
		}
		p.snapshot(f.GetSeq(), 1, nil)
		p.recv()
	})
	ctx := testContext(t)
	c, err := Dial(ctx, d.path, WithoutScope())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Subscribe(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	wait(t, done)
}

// The descriptor Hello passes goes out as SCM_RIGHTS (checked here with a
// pipe, for hosts without RDMA netlink), and stays the caller's.
func TestWriteFDPassesDescriptor(t *testing.T) {
	var pipe [2]int
	if err := syscall.Pipe2(pipe[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(pipe[0])
	defer syscall.Close(pipe[1])
	var want syscall.Stat_t
	if err := syscall.Fstat(pipe[0], &want); err != nil {
		t.Fatal(err)
	}
	d := newFake(t)
	done := d.serve(func(p *peer) {
		p.hello(1)
		f, fd := p.recvFD()
		var st syscall.Stat_t
		if fd < 0 || syscall.Fstat(fd, &st) != nil || st.Ino != want.Ino ||
			st.Dev != want.Dev || f.GetRescan() == nil {
			p.t.Errorf("got %v with descriptor %d (%v), want the pipe",
				f, fd, st)
		}
		if fd >= 0 {
			syscall.Close(fd)
		}
		p.status(f.GetSeq(), rdmadpb.Status_STATUS_OK, "")
		p.recv()
	})
	ctx := testContext(t)
	c, err := Dial(ctx, d.path, WithoutScope())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := &call{kind: callPlain, done: make(chan result, 1)}
	if _, err := c.writeFD(ctx, &rdmadpb.Frame{Body: &rdmadpb.Frame_Rescan{
		Rescan: &rdmadpb.Rescan{}}}, cl, pipe[0]); err != nil {
		t.Fatal(err)
	}
	if r := <-cl.done; r.err != nil {
		t.Error(r.err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(pipe[0], &st); err != nil || st.Ino != want.Ino {
		t.Error("writeFD closed the caller's descriptor")
	}
	c.Close()
	wait(t, done)
}
