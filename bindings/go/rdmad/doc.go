// SPDX-License-Identifier: MIT

// Package rdmad is a client of rdmad, the hotplug-aware RDMA device manager.
// It speaks the protocol of proto/PROTOCOL.md (version 1) over rdmad's
// AF_UNIX SOCK_SEQPACKET socket, so that a Go program (a Kubernetes device
// plugin, a DRA driver) learns of RDMA devices coming and going as it
// happens instead of polling sysfs.
//
// A program dials the daemon, takes a snapshot or subscribes, and holds the
// devices it hands out:
//
//	c, err := rdmad.Dial(ctx, "") // --socket, else $RDMAD_SOCKET, else /run/rdmad/rdmad.sock
//	if err != nil { ... }
//	defer c.Close()
//	sub, err := c.Subscribe(ctx)
//	state := sub.State() // every device, at state.Generation
//	for {
//		u, err := sub.Next(ctx) // an event, or a resync after a gap
//		if err != nil { ... }   // the connection is gone: Dial again
//		use(u.State)
//	}
//
// Subscription.Next applies the rules of PROTOCOL.md section 8 and 9: events
// come in generation order, one already contained in the state is skipped,
// a gap (or an event type this package does not know) makes it subscribe
// again and return the new snapshot as an [UpdateResync], and so does an
// unsolicited snapshot from a daemon that dropped events for a slow reader.
// Snapshots split into parts are assembled and checked (parts 0, 1, ... of
// one generation), and fields a newer daemon adds are ignored.
//
// Dial asks for the protocol's "lifecycle" feature (PROTOCOL.md section 8a;
// [WithoutLifecycle] leaves it out): devices carry an Identity that
// survives every registration and an Incarnation that counts them, Ready,
// Aliases, the AWAY state with its deadline, and the events RETURNED,
// READY, UNREADY, EXPECTING and SETTLED.  The state then keys its entries
// by (identity, incarnation), so that a removed device still held and the
// same hardware registered again are two entries; [Update].Previous is
// the entry an event replaced (for RETURNED, the life that ended) and
// [Update].Sriov the PF's VF numbers of EXPECTING and SETTLED.  [Ready],
// [Present], [Away] and [Resolve] (a name or an rdmad.conf alias) read a
// device or a state.
//
// Every connection has a view (PROTOCOL.md section 8b): rdmad lists the
// devices this process's namespaces can use (in a container, those whose
// uverbs node is in its mount namespace and, in the kernel's exclusive
// RDMA netns mode, in its network namespace), and what it found comes in
// [Conn.View] and in each [Snapshot].View.  A device that a client of this
// view could not open carries Unusable ([Unusable]; [Usable] and [Ready]
// say no for it); one that leaves the view comes as REMOVED with a Reason
// ("mount" or "netns") and leaves the state.  Clients that see all (root
// in the host's namespaces, rdmad's admin group) get each holder's Pidns,
// Netns, Mntns and PodUid as well.  Dial says where this process is, as
// librdmad does: Hello, Subscribe and GetStatus carry a Scope (its mount
// namespace and the character devices of its /dev/infiniband, at most
// 256), and Hello passes a NETLINK_RDMA socket of its network namespace
// where the kernel has RDMA netlink, closed once sent; [WithoutScope]
// sends none, as a client that predates Scope.
//
// Holds belong to the connection: [Conn.Hold] makes the daemon list this
// process (pid, uid, comm by SO_PEERCRED) as a holder of the device, so that
// a device unplugged while in use stays listed as removed until
// [Conn.Release] or until the connection closes.  A program that reconnects
// must hold again.
//
// Every call takes a context: its deadline or cancellation ends the wait for
// the reply (the request may still have been carried out).  Errors wrap the
// daemon's status, so errors.Is(err, rdmad.ErrNoSuchDevice) and the like
// work, and the connection-level ones (ErrDisconnected, ErrProtocol,
// ErrClosed) say that the Conn is no longer usable.
//
// The message types are in the subpackage rdmadpb, generated from
// proto/rdmad.proto.
package rdmad
