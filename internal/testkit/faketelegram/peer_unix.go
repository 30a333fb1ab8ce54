//go:build unix

package faketelegram

import (
	"net"
	"syscall"
)

// closedByPeer peeks at c without consuming anything: a read of 0 bytes
// means the other end closed it (its FIN arrived); no data yet (EAGAIN)
// means it is open.
func closedByPeer(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	// Control, not Read: the server's own background read holds the
	// connection's read lock while the request waits.
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = n == 0 && err == nil || err == syscall.ECONNRESET
	})
	return gone
}
