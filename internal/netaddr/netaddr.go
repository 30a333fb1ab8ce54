// Package netaddr holds the daemon's one rule for listen addresses: whether
// a server.listen value (host:port) is reachable from this host only. The
// daemon (admin endpoints without a token), the web console and doctor all
// ask it, so they always agree. It imports only the standard library.
package netaddr

import "net"

// IsLoopback reports whether listen, a host:port listen address, binds a
// loopback address or "localhost". An address without a port, or with no
// host (":8080", every interface), is not loopback.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
