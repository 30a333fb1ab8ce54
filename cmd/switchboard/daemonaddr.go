package main

// Where the CLI finds the running daemon (B8). server.listen is read by the
// daemon at start only, and `run --listen` overrides it, so the config file
// may name another address than the one the daemon listens on. The daemon
// records that one in <data_dir>/daemon.listen (internal/daemon/listenfile.go)
// and removes it when it stops; after a crash the record is stale. The CLI
// asks the recorded address when the daemon there proves itself
// (daemonproof.go) — or, without the local token to check with, when
// something listens there — and server.listen otherwise.

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// probeDial bounds a look at the recorded address.
const probeDial = 2 * time.Second

// daemonAddr is the address (host:port, as dialed) at which to ask the
// daemon serving cfg's data, and a note for the operator when it is not
// server.listen's. local is the local admin token to check the daemon with
// ("" when it cannot be read).
func daemonAddr(cfg *config.Config, local string) (addr, note string) {
	addr = dialable(cfg.Server.Listen)
	rec := daemon.ReadListenFile(cfg.ResolvePath(cfg.Bot.DataDir))
	if rec == "" || sameAddr(dialable(rec), addr) {
		return addr, ""
	}
	rec = dialable(rec)
	if !daemonAt(rec, local) {
		return addr, "" // stale: the daemon that wrote it is gone
	}
	return rec, "switchboard: note: the daemon listens at " + rec + "; server.listen in the config (" +
		cfg.Server.Listen + ") takes effect when it restarts"
}

// daemonAt reports whether the daemon answers at addr: it proves itself
// with local, or, when local is "", something accepts connections there.
func daemonAt(addr, local string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeDial)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	return local == "" || proveDaemon(ctx, conn, addr, local) == nil
}

// dialable is a listen address as a client dials it: a wildcard host
// (0.0.0.0, ::, none) is this machine's loopback.
func dialable(listen string) string {
	h, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if h == "" || h == "0.0.0.0" || h == "::" {
		return "127.0.0.1:" + port
	}
	return listen
}

// sameAddr reports whether two dialable addresses reach the same listener:
// the same port, and the same host, both loopback, or a name that resolves
// to the other's address.
func sameAddr(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil {
		return a == b
	}
	if pa != pb {
		return false
	}
	if strings.EqualFold(ha, hb) || (isLoopbackHost(ha) && isLoopbackHost(hb)) {
		return true
	}
	name, ip := ha, net.ParseIP(hb)
	if ip == nil {
		name, ip = hb, net.ParseIP(ha)
	}
	if ip == nil || net.ParseIP(name) != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeDial)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, name)
	if err != nil {
		return false
	}
	for _, x := range addrs {
		if x.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// isLoopbackHost reports whether h names this machine's loopback.
func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
