//go:build !unix

package faketelegram

import "net"

// closedByPeer cannot tell here: only a canceled request counts as gone.
func closedByPeer(net.Conn) bool { return false }
