package faketelegram

import (
	"context"
	"net"
)

// A getUpdates call superseded by a newer one is a conflict (two pollers at
// once) only if its client is still there. A bot that stopped polling
// closed its connection before anything else could start polling (another
// replica took over, the daemon restarted), but the server notices a
// closed connection only when it next reads from it, which a loaded
// machine may not have scheduled yet: the old call would be counted as
// terminated by the new one although nobody was waiting for it. So the
// connection is looked at directly (peerGone).

// connKey is the request context key of the connection a request came on.
type connKey struct{}

// withConn is the server's ConnContext: requests carry their connection.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// peerGone reports whether the client of the request with context ctx has
// gone: the request was canceled, or its connection was closed by the
// other end (closedByPeer; false where that cannot be told).
func peerGone(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	c, ok := ctx.Value(connKey{}).(net.Conn)
	return ok && closedByPeer(c)
}
