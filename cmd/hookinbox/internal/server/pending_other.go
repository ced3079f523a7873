//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package server

import "net"

// pending reports false where the listener cannot peek at a connection: the
// eviction then relies on Read alone to see a request begin.
func pending(net.Conn) bool { return false }
