// SPDX-License-Identifier: MIT

package deviceplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	api "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/deviceplugin/v1beta1"
)

// registrar is the kubelet's Registration service, telling each Register.
type registrar struct {
	api.UnimplementedRegistrationServer
	got chan string
}

func (r *registrar) Register(ctx context.Context, req *api.RegisterRequest) (*api.Empty, error) {
	r.got <- req.ResourceName
	return &api.Empty{}, nil
}

// kubeletSock binds dir/kubelet.sock and listens on it @delay later, as a
// kubelet starting up may; the server it serves until the test ends.
func kubeletSock(t *testing.T, dir string, delay time.Duration, r *registrar) *grpc.Server {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: filepath.Join(dir, "kubelet.sock")}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	if err := syscall.Listen(fd, 16); err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "kubelet.sock")
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	api.RegisterRegistrationServer(s, r)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return s
}

func (r *registrar) await(t *testing.T, what string, within time.Duration) time.Duration {
	t.Helper()
	t0 := time.Now()
	select {
	case name := <-r.got:
		if name != "rdmad.io/hca" {
			t.Fatalf("%s: registered %q", what, name)
		}
		return time.Since(t0)
	case <-time.After(within):
		t.Fatalf("%s: no Register in %v", what, within)
	}
	return 0
}

// A kubelet that restarts is registered with again though its socket got
// the old inode number (ext4 hands a freed one straight back): every
// kubelet.sock here has inode number 42, and the restart leaves the
// plugin's own socket in place, so nothing but the socket's creation says
// that the kubelet is new.  Registering waits on no 1 s backoff of gRPC's
// though the kubelet listens a while after it binds.
func TestKubeletRestartWithTheSameInode(t *testing.T) {
	saved := kubeletID
	kubeletID = func(dir string) uint64 {
		if _, err := os.Stat(filepath.Join(dir, "kubelet.sock")); err != nil {
			return 0
		}
		return 42
	}
	defer func() { kubeletID = saved }()
	dir := t.TempDir()
	r := &registrar{got: make(chan string, 8)}
	srv := kubeletSock(t, dir, 0, r)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, config(t, `{"resources":[{"name":"hca"}]}`),
			Options{Socket: filepath.Join(dir, "no-rdmad"), KubeletDir: dir})
	}()
	r.await(t, "first kubelet", 10*time.Second)
	for i := 0; i < 3; i++ {
		srv.Stop()
		os.Remove(filepath.Join(dir, "kubelet.sock"))
		const late = 300 * time.Millisecond
		t0 := time.Now()
		srv = kubeletSock(t, dir, late, r)
		r.await(t, "restarted kubelet", 10*time.Second)
		// gRPC's own backoff would dial again 1 s after the refusal.
		if d := time.Since(t0); d > late+600*time.Millisecond {
			t.Errorf("restart %d: registered %v after the bind, listening %v after it", i, d, late)
		}
	}
	select {
	case name := <-r.got:
		t.Fatalf("registered %s once more than the kubelet restarted", name)
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	<-done
}
