// SPDX-License-Identifier: MIT

package rdmad

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// golden reads tests/unit/proto/golden/NAME.hex, the wire vectors the C side is
// tested against (PROTOCOL.md section 11).
func golden(t *testing.T, name string) []byte {
	t.Helper()
	root := os.Getenv("RDMAD_SOURCE_ROOT")
	if root == "" {
		root = filepath.Join("..", "..", "..")
	}
	text, err := os.ReadFile(filepath.Join(root, "tests", "unit", "proto",
		"golden", name+".hex"))
	if err != nil {
		t.Fatalf("golden vector: %v", err)
	}
	var digits strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(line, "#") {
			digits.WriteString(strings.TrimSpace(line))
		}
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s.hex: %v", name, err)
	}
	return b
}

// The client's requests are byte for byte the golden vectors, and the
// daemon's golden frames decode to what their comments say.
func TestGoldenConversation(t *testing.T) {
	d := newFake(t)
	want := []string{"hello", "subscribe", "get_status", "hold", "release",
		"rescan"}
	got := make(chan []byte, len(want))
	done := d.serve(func(p *peer) {
		buf := make([]byte, maxRequest)
		next := func() []byte {
			p.c.SetReadDeadline(time.Now().Add(deadline))
			n, err := p.c.Read(buf)
			if err != nil {
				p.t.Errorf("fake daemon: %v", err)
				return nil
			}
			b := append([]byte(nil), buf[:n]...)
			got <- b
			return b
		}
		next()
		p.sendBytes(golden(t, "welcome"), nil)
		next()
		// The subscription's snapshot: the golden one at seq 2.
		f := &rdmadpb.Frame{}
		if err := proto.Unmarshal(golden(t, "snapshot"), f); err != nil {
			p.t.Errorf("snapshot.hex: %v", err)
		}
		f.Seq = 2
		p.send(f)
		p.sendBytes(golden(t, "event"), nil)
		next()
		p.sendBytes(golden(t, "snapshot"), nil) // seq 3
		next()
		p.sendBytes(golden(t, "status_reply"), nil) // seq 4
		next()
		p.status(5, rdmadpb.Status_STATUS_OK, "")
		next()
		p.status(6, rdmadpb.Status_STATUS_PERMISSION_DENIED,
			"needs root or the admin group")
		p.recv()
	})
	ctx := testContext(t)
	// The golden Hello is the base protocol's, without features, and
	// the golden requests say no Scope.
	c, err := Dial(ctx, d.path, WithClientName("rdmactl"),
		WithoutLifecycle(), WithoutScope())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := c.Welcome()
	if w.GetVersion() != 1 || w.GetGeneration() != 42 ||
		w.GetDaemonVersion() != "0.1.0" || !w.GetGenerationPage() {
		t.Errorf("welcome: %v", w)
	}
	sub, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dev := sub.State().Device("mlx5_0")
	if sub.Generation() != 42 || dev == nil || dev.GetNumaNode() != -1 ||
		len(dev.GetPorts()) != 1 || len(dev.GetHolders()) != 1 {
		t.Fatalf("snapshot: %v", sub.State())
	}
	u, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev := u.Event
	if u.Kind != UpdateEvent || u.Generation != 43 ||
		ev.GetType() != rdmadpb.EventType_EVENT_TYPE_RENAMED ||
		ev.GetDevice().GetOldName() != "mlx5_0" ||
		!equal(names(u.State), []string{"mlx5_1"}) {
		t.Errorf("event: %v %v", ev, names(u.State))
	}
	s, err := c.Snapshot(ctx)
	if err != nil || s.Generation != 42 || s.Device("mlx5_0") == nil {
		t.Errorf("get status: %v %v", s, err)
	}
	err = c.Hold(ctx, "mlx5_0")
	var se *StatusError
	if !errors.Is(err, ErrNoSuchDevice) || !errors.As(err, &se) ||
		se.Message != "no device mlx5_9" {
		t.Errorf("hold: %v", err)
	}
	if err := c.Release(ctx, "mlx5_0"); err != nil {
		t.Errorf("release: %v", err)
	}
	if err := c.Rescan(ctx); !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("rescan: %v", err)
	}
	for _, name := range want {
		select {
		case b := <-got:
			if g := golden(t, name); !bytes.Equal(b, g) {
				t.Errorf("%s: sent %x, golden %x", name, b, g)
			}
		case <-time.After(deadline):
			t.Fatalf("%s: nothing sent", name)
		}
	}
	c.Close()
	wait(t, done)
}
