package daemon

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-bot/switchboard/internal/opfile"
)

// ListenFile is the file in bot.data_dir where a running daemon names the
// address its admin API listens on (mode 0600, removed when it stops).
// server.listen is read at start only, and `run --listen` overrides it: the
// config file may name another address than the one the daemon listens on
// (after `config set server.listen`, until the restart). CLI commands ask
// the address this file names first (B8), and whatever answers there proves
// it is the daemon before it is sent a token (hello.go), so a stale file
// after a crash sends nothing anywhere.
const ListenFile = "daemon.listen"

// maxListenFile bounds what is read of ListenFile (an address is short).
const maxListenFile = 256

// writeListenFile records addr for CLI commands; a failure is logged, and
// the commands then go by server.listen as before.
func (d *Daemon) writeListenFile(addr net.Addr) {
	dir := d.config().ResolvePath(d.config().Bot.DataDir)
	if err := writeFile0600(filepath.Join(dir, ListenFile), []byte(addr.String()+"\n")); err != nil {
		d.log.Warn("could not record the admin API's address for CLI commands; they use server.listen", "err", err)
	}
}

// removeListenFile removes ListenFile if it still names addr (a daemon
// started since on the same data directory keeps its own).
func (d *Daemon) removeListenFile(addr net.Addr) {
	path := filepath.Join(d.config().ResolvePath(d.config().Bot.DataDir), ListenFile)
	if data, err := opfile.ReadFile(path, maxListenFile); err == nil && bytes.Equal(bytes.TrimSpace(data), []byte(addr.String())) {
		_ = os.Remove(path)
	}
}

// ReadListenFile returns the address data directory dir's ListenFile names
// ("" when there is none, or it is not a regular file or holds no address).
func ReadListenFile(dir string) string {
	data, err := opfile.ReadFile(filepath.Join(dir, ListenFile), maxListenFile)
	if err != nil {
		return ""
	}
	addr := strings.TrimSpace(string(data))
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return ""
	}
	return addr
}
