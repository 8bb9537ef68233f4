// SPDX-License-Identifier: MIT

package rdmad

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// Protocol constants (PROTOCOL.md sections 2 and 3).
const (
	// Version is the protocol version this package speaks.
	Version = 1
	// DefaultSocket is rdmad's socket when neither a path nor
	// $RDMAD_SOCKET says otherwise (the build default of rdmad).
	DefaultSocket = "/run/rdmad/rdmad.sock"

	maxFrame   = 65536 // any frame from the daemon
	maxRequest = 4096  // a request to the daemon
	maxName    = 63    // bytes of a device name

	// FeatureLifecycle is the Hello feature of PROTOCOL.md section 8a: a
	// device's lives (identity, incarnation, readiness, AWAY and the
	// events RETURNED, READY, UNREADY, EXPECTING and SETTLED).
	FeatureLifecycle = "lifecycle"
	// FeatureRemoving is the Hello feature of PROTOCOL.md "Removing": the
	// event REMOVING, the moment the kernel begins to unregister a device
	// (close every context on it then; do not wait for REMOVED).  It is
	// said with FeatureLifecycle.
	FeatureRemoving = "removing"
)

// SocketPath resolves the socket as rdmad, librdmad and rdmactl do: path
// when not empty, else $RDMAD_SOCKET, else DefaultSocket.
func SocketPath(path string) string {
	if path != "" {
		return path
	}
	if env := os.Getenv("RDMAD_SOCKET"); env != "" {
		return env
	}
	return DefaultSocket
}

// Option configures Dial.
type Option func(*options)

type options struct {
	clientName  string
	noPage      bool
	noLifecycle bool
	noRemoving  bool
	noScope     bool
}

// WithClientName sets the Hello's client_name, free text for the daemon's
// logs (default: the program's name).
func WithClientName(name string) Option {
	return func(o *options) { o.clientName = name }
}

// WithoutGenerationPage closes the generation page the daemon passes
// instead of mapping it; Generation then reports what came by messages.
func WithoutGenerationPage() Option {
	return func(o *options) { o.noPage = true }
}

// WithoutLifecycle leaves the "lifecycle" feature (PROTOCOL.md section 8a)
// out of the Hello: the daemon then sends what a client of the base
// protocol knows (a return as ADDED, READY, UNREADY, EXPECTING and
// SETTLED as CHANGED, an AWAY device as REMOVED), and a Subscription keys
// its entries by name as before.  The lifecycle fields of a Device
// (Identity, Incarnation, Ready, Aliases, ...) still come from a daemon
// that has them.
func WithoutLifecycle() Option {
	return func(o *options) { o.noLifecycle = true }
}

// WithoutRemoving leaves the "removing" feature (PROTOCOL.md, "Removing")
// out of the Hello: the daemon then sends UNREADY (or, without lifecycle,
// CHANGED) where it would send REMOVING, with Device.Removing set either
// way.  For code written before REMOVING that switches on event types.
func WithoutRemoving() Option {
	return func(o *options) { o.noRemoving = true }
}

// WithoutScope sends no Scope (PROTOCOL.md section 8b) in Hello, Subscribe
// and GetStatus: neither this process's /dev/infiniband nodes nor a
// NETLINK_RDMA socket of its network namespace.  rdmad then treats it as
// a client that predates Scope (PROTOCOL.md 8b: the host's view, with
// View.Verified false).  For tests, and for comparing with such clients.
func WithoutScope() Option {
	return func(o *options) { o.noScope = true }
}

// Conn is one connection to rdmad, after the Hello/Welcome handshake.  Its
// methods may be called from several goroutines at once.  A Conn does not
// reconnect: once a call returns a connection-level error (ErrDisconnected,
// ErrProtocol, ErrClosed), Dial again, hold again and subscribe again; the
// generation tells whether anything changed in between.
type Conn struct {
	path    string
	uc      *net.UnixConn
	raw     syscall.RawConn
	welcome *rdmadpb.Welcome
	// lifecycle: the Hello listed FeatureLifecycle.
	lifecycle bool
	// scope: Hello, Subscribe and GetStatus carry a Scope.
	scope bool

	pageMu sync.RWMutex
	page   *genPage

	wmu     sync.Mutex // one request written at a time, in seq order
	nextSeq uint64

	mu      sync.Mutex
	pending map[uint64]*call
	sub     *Subscription
	err     error         // why the reader stopped
	done    chan struct{} // closed when it did
	closing atomic.Bool

	generation atomic.Uint64 // the newest generation seen in messages

	// Read by the reader goroutine only.
	buf []byte
	oob []byte
	asm *assembly // a snapshot whose parts are coming, or nil
}

type callKind int

const (
	callPlain     callKind = iota // a reply frame
	callSnapshot                  // GetStatus: a snapshot
	callSubscribe                 // Subscribe: a snapshot, in the event stream
)

type call struct {
	kind callKind
	done chan result // buffered: the reader never waits for the caller
}

type result struct {
	frame *rdmadpb.Frame
	snap  *Snapshot
	err   error
}

// Dial connects to rdmad at path (SocketPath rules: "" means $RDMAD_SOCKET
// or DefaultSocket), says Hello and waits for the Welcome, mapping the
// generation page that comes with it.  ctx bounds the connect and the
// handshake; the Conn outlives it.
func Dial(ctx context.Context, path string, opts ...Option) (*Conn, error) {
	o := options{clientName: filepath.Base(os.Args[0])}
	for _, opt := range opts {
		opt(&o)
	}
	path = SocketPath(path)
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unixpacket", path)
	if err != nil {
		return nil, fmt.Errorf("rdmad: connect to %s: %w", path, err)
	}
	uc := nc.(*net.UnixConn)
	raw, err := uc.SyscallConn()
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("rdmad: %s: %w", path, err)
	}
	c := &Conn{
		path:      path,
		uc:        uc,
		raw:       raw,
		lifecycle: !o.noLifecycle,
		scope:     !o.noScope,
		nextSeq:   1,
		pending:   make(map[uint64]*call),
		done:      make(chan struct{}),
		buf:       make([]byte, maxFrame),
		oob:       make([]byte, syscall.CmsgSpace(4*4)),
	}
	if err := c.hello(ctx, &o); err != nil {
		uc.Close()
		return nil, fmt.Errorf("rdmad: %s: hello: %w", path, err)
	}
	go c.readLoop()
	return c, nil
}

// hello does the handshake before the reader runs: the Welcome is the one
// frame that carries a descriptor.
func (c *Conn) hello(ctx context.Context, o *options) error {
	h := &rdmadpb.Hello{ClientName: o.clientName}
	if !o.noLifecycle {
		h.Features = []string{FeatureLifecycle}
		if !o.noRemoving {
			h.Features = append(h.Features, FeatureRemoving)
		}
	}
	// Where this process is (PROTOCOL.md 8b): its /dev/infiniband, and a
	// socket of its network namespace for rdmad to ask the kernel
	// through, closed once sent.
	pass := -1
	if c.scope {
		h.Scope = collectScope(scopeDevDir)
		pass = netnsSocket()
		h.Scope.NetnsSocket = pass >= 0
	}
	f := &rdmadpb.Frame{Body: &rdmadpb.Frame_Hello{Hello: h}}
	seq, err := c.writeFD(ctx, f, nil, pass)
	if pass >= 0 {
		syscall.Close(pass)
	}
	if err != nil {
		return err
	}
	stop := c.watch(ctx, c.uc.SetReadDeadline)
	defer stop()
	for {
		reply, fd, err := c.recv()
		if err != nil {
			return ctxError(ctx, err)
		}
		if reply.GetSeq() != seq {
			// Nothing else can come before the Welcome; a pushed
			// frame would carry nothing for us yet.
			if fd >= 0 {
				syscall.Close(fd)
			}
			continue
		}
		if err := replyError(reply); err != nil {
			if fd >= 0 {
				syscall.Close(fd)
			}
			return err
		}
		w := reply.GetWelcome()
		if w == nil {
			if fd >= 0 {
				syscall.Close(fd)
			}
			return protocolError("Hello answered without a Welcome")
		}
		c.welcome = w
		c.generation.Store(w.GetGeneration())
		if fd >= 0 {
			if w.GetGenerationPage() && !o.noPage {
				c.page = mapPage(fd)
			} else {
				syscall.Close(fd)
			}
		}
		return nil
	}
}

// watch applies ctx's deadline to the socket with set, and makes a
// cancellation end a blocked read or write; the returned func undoes both.
func (c *Conn) watch(ctx context.Context, set func(time.Time) error) func() {
	if d, ok := ctx.Deadline(); ok {
		set(d)
	}
	if ctx.Done() == nil {
		return func() { set(time.Time{}) }
	}
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-ctx.Done():
			set(time.Unix(1, 0))
		case <-stop:
		}
	}()
	return func() {
		close(stop)
		<-finished
		set(time.Time{})
	}
}

// ctxError is ctx's error for an I/O error that ctx's deadline or
// cancellation caused (the socket's deadline may pass a moment before the
// context's timer does), err otherwise.
func ctxError(ctx context.Context, err error) error {
	if e := ctx.Err(); e != nil {
		return e
	}
	if _, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}

// recv reads one datagram and decodes it; fd is a descriptor that came
// with it (the caller closes it) or -1.
func (c *Conn) recv() (*rdmadpb.Frame, int, error) {
	var n, oobn, flags int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		n, oobn, flags, _, rerr = syscall.Recvmsg(int(fd), c.buf, c.oob,
			syscall.MSG_CMSG_CLOEXEC)
		return rerr != syscall.EAGAIN && rerr != syscall.EINTR
	})
	if err == nil {
		err = rerr
	}
	fd := -1
	if err == nil && oobn > 0 {
		fd = takeDescriptor(c.oob[:oobn])
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return nil, fd, ErrDisconnected
	case err != nil:
		return nil, fd, err
	case n == 0:
		return nil, fd, ErrDisconnected
	case flags&syscall.MSG_TRUNC != 0:
		return nil, fd, protocolError("a datagram longer than %d bytes",
			maxFrame)
	}
	f := &rdmadpb.Frame{}
	if err := proto.Unmarshal(c.buf[:n], f); err != nil {
		return nil, fd, protocolError("undecodable frame: %v", err)
	}
	if f.GetVersion() != Version {
		return nil, fd, fmt.Errorf("%w: rdmad speaks version %d, this "+
			"client %d", ErrUnsupportedVersion, f.GetVersion(), Version)
	}
	return f, fd, nil
}

// takeDescriptor returns the first descriptor passed in oob and closes any
// others.
func takeDescriptor(oob []byte) int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return -1
	}
	fd := -1
	for i := range msgs {
		fds, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, f := range fds {
			if fd < 0 {
				fd = f
			} else {
				syscall.Close(f)
			}
		}
	}
	return fd
}

// requestScope is the Scope for a Subscribe or GetStatus (this process's
// /dev/infiniband as it is now), nil under WithoutScope.
func (c *Conn) requestScope() *rdmadpb.Scope {
	if !c.scope {
		return nil
	}
	return collectScope(scopeDevDir)
}

// write sends one request with the next seq, registering cl (if any) for
// its reply before the reply can come.
func (c *Conn) write(ctx context.Context, f *rdmadpb.Frame, cl *call) (uint64, error) {
	return c.writeFD(ctx, f, cl, -1)
}

// writeFD is write that passes descriptor pass (SCM_RIGHTS) with the
// frame, unless it is -1.  The caller still owns pass.
func (c *Conn) writeFD(ctx context.Context, f *rdmadpb.Frame, cl *call, pass int) (uint64, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	seq := c.nextSeq
	f.Version, f.Seq = Version, seq
	b, err := proto.Marshal(f)
	if err != nil {
		return 0, err
	}
	if len(b) > maxRequest {
		return 0, fmt.Errorf("request of %d bytes, more than %d",
			len(b), maxRequest)
	}
	if cl != nil {
		c.mu.Lock()
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return 0, err
		}
		c.pending[seq] = cl
		c.mu.Unlock()
	}
	c.nextSeq++
	var oob []byte
	if pass >= 0 {
		oob = syscall.UnixRights(pass)
	}
	stop := c.watch(ctx, c.uc.SetWriteDeadline)
	_, _, err = c.uc.WriteMsgUnix(b, oob, nil)
	stop()
	if err != nil {
		if cl != nil {
			c.forget(seq)
		}
		if e := ctxError(ctx, err); e != err {
			return 0, e
		}
		if c.closing.Load() {
			return 0, ErrClosed
		}
		if e := c.Err(); e != nil {
			return 0, e
		}
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return 0, ErrDisconnected
		}
		return 0, err
	}
	return seq, nil
}

func (c *Conn) forget(seq uint64) {
	c.mu.Lock()
	delete(c.pending, seq)
	c.mu.Unlock()
}

// request sends f and waits for its reply (a frame, or the assembled
// snapshot) within ctx.
func (c *Conn) request(ctx context.Context, f *rdmadpb.Frame, kind callKind) (result, error) {
	cl := &call{kind: kind, done: make(chan result, 1)}
	seq, err := c.write(ctx, f, cl)
	if err != nil {
		return result{}, err
	}
	select {
	case r := <-cl.done:
		return r, r.err
	case <-ctx.Done():
		c.forget(seq)
		return result{}, ctx.Err()
	}
}

// replyError is the error of a non-OK reply, nil for OK.
func replyError(f *rdmadpb.Frame) error {
	if f.GetStatus() == rdmadpb.Status_STATUS_OK {
		return nil
	}
	return &StatusError{Status: f.GetStatus(), Message: f.GetError()}
}

// readLoop reads every frame after the Welcome until the connection ends.
func (c *Conn) readLoop() {
	var err error
	for err == nil {
		var f *rdmadpb.Frame
		var fd int
		f, fd, err = c.recv()
		if fd >= 0 {
			syscall.Close(fd) // only the Welcome carries one
		}
		if err == nil {
			err = c.dispatch(f)
		}
	}
	if c.closing.Load() {
		err = ErrClosed
	} else if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		err = ErrDisconnected
	}
	c.mu.Lock()
	c.err = err
	for seq, cl := range c.pending {
		cl.done <- result{err: err}
		delete(c.pending, seq)
	}
	sub := c.sub
	c.mu.Unlock()
	if sub != nil {
		sub.push(item{err: err})
	}
	close(c.done)
	if !c.closing.Load() {
		// A protocol error: the daemon must not go on sending.
		c.uc.Close()
	}
}

func (c *Conn) seen(gen uint64) {
	for {
		old := c.generation.Load()
		if gen <= old || c.generation.CompareAndSwap(old, gen) {
			return
		}
	}
}

// dispatch routes one frame: a part of the snapshot being assembled, a
// reply to a pending call, or a pushed event or snapshot.
func (c *Conn) dispatch(f *rdmadpb.Frame) error {
	if c.asm != nil {
		// No other frame comes between the parts of one snapshot.
		if f.GetSeq() != c.asm.seq || f.GetSnapshot() == nil {
			return protocolError("a frame (seq %d) inside the parts of "+
				"a snapshot (seq %d)", f.GetSeq(), c.asm.seq)
		}
		return c.addPart(f.GetSnapshot())
	}
	if f.GetSeq() == 0 {
		switch {
		case f.GetSnapshot() != nil:
			c.asm = &assembly{}
			return c.addPart(f.GetSnapshot())
		case f.GetEvent() != nil:
			c.pushToSub(item{event: f.GetEvent()})
			c.seen(f.GetEvent().GetGeneration())
		}
		// Anything else pushed is newer than this client: ignored.
		return nil
	}
	c.mu.Lock()
	cl := c.pending[f.GetSeq()]
	c.mu.Unlock()
	if err := replyError(f); err != nil {
		if cl != nil && cl.kind == callSubscribe {
			c.pushToSub(item{err: err, seq: f.GetSeq()})
		}
		c.finish(f.GetSeq(), cl, result{err: err})
		return nil
	}
	if f.GetSnapshot() != nil {
		// Also when nobody waits any more: the parts must be read.
		c.asm = &assembly{seq: f.GetSeq()}
		return c.addPart(f.GetSnapshot())
	}
	if cl != nil && cl.kind != callPlain {
		c.finish(f.GetSeq(), cl, result{err: protocolError(
			"a snapshot request answered without a snapshot")})
		return nil
	}
	c.finish(f.GetSeq(), cl, result{frame: f})
	return nil
}

func (c *Conn) addPart(p *rdmadpb.Snapshot) error {
	snap, err := c.asm.add(p)
	if err != nil || snap == nil {
		return err
	}
	seq := c.asm.seq
	c.asm = nil
	c.seen(snap.Generation)
	c.mu.Lock()
	cl := c.pending[seq]
	sub := c.sub
	c.mu.Unlock()
	// An unsolicited snapshot (seq 0) and the reply to Subscribe go into
	// the subscription's stream, in order with the events around them.
	if sub != nil && (seq == 0 || (cl != nil && cl.kind == callSubscribe)) {
		sub.push(item{snap: snap, seq: seq})
	}
	c.finish(seq, cl, result{snap: snap})
	return nil
}

func (c *Conn) pushToSub(it item) {
	c.mu.Lock()
	sub := c.sub
	c.mu.Unlock()
	if sub != nil {
		sub.push(it)
	}
}

func (c *Conn) finish(seq uint64, cl *call, r result) {
	if cl == nil {
		return
	}
	c.forget(seq)
	cl.done <- r
}

// Close ends the connection, and with it the holds it made and its
// subscription.  Calls waiting for replies return ErrClosed.
func (c *Conn) Close() error {
	if c.closing.Swap(true) {
		return nil
	}
	err := c.uc.Close()
	<-c.done
	if errors.Is(err, net.ErrClosed) {
		err = nil // the reader closed it after an error
	}
	c.pageMu.Lock()
	if c.page != nil {
		c.page.unmap()
		c.page = nil
	}
	c.pageMu.Unlock()
	return err
}

// Done is closed when the connection has ended (Err says why).
func (c *Conn) Done() <-chan struct{} {
	return c.done
}

// Err is why the connection ended, or nil while it has not.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Path is the socket this Conn connected to.
func (c *Conn) Path() string {
	return c.path
}

// Welcome is the daemon's answer to Hello: its protocol and program
// versions, the generation at the time and this connection's view.
func (c *Conn) Welcome() *rdmadpb.Welcome {
	return c.welcome
}

// View is what this connection sees as the Welcome said it (PROTOCOL.md
// section 8b): the network, mount and PID namespaces rdmad found for
// this process (never what a client claims), its Kubernetes pod UID, the
// kernel's RDMA netns mode, whether it sees every device and holder
// (All), whether rdmad knew its namespaces or got its Scope (Verified; if
// not, the host's view), whether it is in rdmad's own namespaces (Host),
// whether it was built from the nodes the Scope reported (Nodes) and the
// network namespace of the Hello's NETLINK_RDMA socket (NetnsCookie).
// Each Snapshot carries the view as of that snapshot.  Nil from a daemon
// before views.
func (c *Conn) View() *rdmadpb.View {
	return c.welcome.GetView()
}

// Lifecycle reports whether this Conn asked for the "lifecycle" feature
// (the default; WithoutLifecycle turns it off).  A daemon that predates it
// ignores the request: its devices then have no Identity, and a
// Subscription keys them by name.
func (c *Conn) Lifecycle() bool {
	return c.lifecycle
}

// HasGenerationPage reports whether the daemon's generation page is mapped.
func (c *Conn) HasGenerationPage() bool {
	c.pageMu.RLock()
	defer c.pageMu.RUnlock()
	return c.page != nil
}

// Generation is the daemon's current generation as read from the
// generation page, without a system call, when one is mapped; otherwise
// the newest generation that came in a message on this connection.  A
// value larger than the one a Subscription last returned means events are
// on their way.
func (c *Conn) Generation() uint64 {
	c.pageMu.RLock()
	defer c.pageMu.RUnlock()
	if c.page != nil {
		return c.page.generation()
	}
	return c.generation.Load()
}

// Snapshot asks for the whole device list now (GetStatus), assembled from
// its parts.
func (c *Conn) Snapshot(ctx context.Context) (*Snapshot, error) {
	r, err := c.request(ctx, &rdmadpb.Frame{Body: &rdmadpb.Frame_GetStatus_{
		GetStatus_: &rdmadpb.GetStatus{Scope: c.requestScope()}}},
		callSnapshot)
	if err != nil {
		return nil, fmt.Errorf("rdmad: get status: %w", err)
	}
	return r.snap, nil
}

// ValidName reports whether name is a device name the daemon accepts
// (proto/name.h): 1 to 63 bytes of printable ASCII other than space and
// '/', not starting with '.'.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > maxName || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] <= ' ' || name[i] > '~' || name[i] == '/' {
			return false
		}
	}
	return true
}

func (c *Conn) simple(ctx context.Context, op string, f *rdmadpb.Frame) error {
	if _, err := c.request(ctx, f, callPlain); err != nil {
		return fmt.Errorf("rdmad: %s: %w", op, err)
	}
	return nil
}

// Hold makes this connection a holder of device name: the daemon lists
// this process among the device's holders, and keeps the device listed
// (as removed) if it is unplugged, until Release or until the connection
// closes.  Errors: ErrNoSuchDevice (not listed, or already removed),
// ErrBadRequest (this connection holds it already), ErrLimit.
func (c *Conn) Hold(ctx context.Context, name string) error {
	op := fmt.Sprintf("hold %q", name)
	if !ValidName(name) {
		return fmt.Errorf("rdmad: %s: %w", op, ErrInvalidName)
	}
	return c.simple(ctx, op, &rdmadpb.Frame{Body: &rdmadpb.Frame_Hold{
		Hold: &rdmadpb.Hold{Name: name}}})
}

// Release ends this connection's hold of device name.  Errors:
// ErrNotHeld, ErrNoSuchDevice.
func (c *Conn) Release(ctx context.Context, name string) error {
	op := fmt.Sprintf("release %q", name)
	if !ValidName(name) {
		return fmt.Errorf("rdmad: %s: %w", op, ErrInvalidName)
	}
	return c.simple(ctx, op, &rdmadpb.Frame{Body: &rdmadpb.Frame_Release{
		Release: &rdmadpb.Release{Name: name}}})
}

// Rescan makes the daemon re-read sysfs now (root or its admin group
// only, else ErrPermissionDenied).  Changes found come as events.
func (c *Conn) Rescan(ctx context.Context) error {
	return c.simple(ctx, "rescan", &rdmadpb.Frame{Body: &rdmadpb.Frame_Rescan{
		Rescan: &rdmadpb.Rescan{}}})
}
