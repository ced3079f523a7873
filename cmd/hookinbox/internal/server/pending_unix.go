//go:build linux || darwin || freebsd || netbsd || openbsd

package server

import (
	"net"
	"syscall"
)

// pending reports whether bytes wait unread in c's receive buffer, without reading
// them (recv with MSG_PEEK, non-blocking, outside the descriptor's read lock, which
// the connection's goroutine holds while it waits in Read).
func pending(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n > 0
}
