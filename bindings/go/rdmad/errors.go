// SPDX-License-Identifier: MIT

package rdmad

import (
	"errors"
	"fmt"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// The daemon's statuses (PROTOCOL.md section 5), for errors.Is.  A
// *StatusError matches the one of its status.
var (
	ErrBadRequest         = errors.New("bad request")
	ErrUnsupportedVersion = errors.New("unsupported protocol version")
	ErrNoSuchDevice       = errors.New("no such device")
	ErrPermissionDenied   = errors.New("permission denied")
	ErrLimit              = errors.New("limit reached")
	ErrNotHeld            = errors.New("device not held")
	ErrInternal           = errors.New("daemon failed")
)

// Errors of this side.
var (
	// ErrClosed: Close was called on the Conn.
	ErrClosed = errors.New("connection closed")
	// ErrDisconnected: the daemon closed the connection or went away.
	ErrDisconnected = errors.New("daemon closed the connection")
	// ErrProtocol: the daemon sent something PROTOCOL.md does not allow
	// (an undecodable or cut frame, snapshot parts out of order, a reply
	// without the body it needs).  The Conn is closed.
	ErrProtocol = errors.New("protocol error")
	// ErrInvalidName: not a device name (1 to 63 bytes of printable
	// ASCII other than space and '/', not starting with '.'); nothing
	// was sent.
	ErrInvalidName = errors.New("invalid device name")
	// ErrAlreadySubscribed: a Conn has one subscription.
	ErrAlreadySubscribed = errors.New("already subscribed")
)

// StatusError is a reply with a status other than STATUS_OK.
type StatusError struct {
	Status  rdmadpb.Status // may be a value newer than this package
	Message string         // the daemon's text, for people; may be empty
}

func (e *StatusError) Error() string {
	name := e.Status.String()
	if e.Message == "" {
		return name
	}
	return name + ": " + e.Message
}

// Is reports whether target is the sentinel error of e's status.  An
// unknown status (from a newer daemon) matches none: it is a failure all
// the same.
func (e *StatusError) Is(target error) bool {
	s := statusSentinel(e.Status)
	return s != nil && s == target
}

func statusSentinel(s rdmadpb.Status) error {
	switch s {
	case rdmadpb.Status_STATUS_BAD_REQUEST:
		return ErrBadRequest
	case rdmadpb.Status_STATUS_UNSUPPORTED_VERSION:
		return ErrUnsupportedVersion
	case rdmadpb.Status_STATUS_NO_SUCH_DEVICE:
		return ErrNoSuchDevice
	case rdmadpb.Status_STATUS_PERMISSION_DENIED:
		return ErrPermissionDenied
	case rdmadpb.Status_STATUS_LIMIT:
		return ErrLimit
	case rdmadpb.Status_STATUS_NOT_HELD:
		return ErrNotHeld
	case rdmadpb.Status_STATUS_INTERNAL:
		return ErrInternal
	}
	return nil
}

func protocolError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}
