package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// AdminTokenFile is the file in bot.data_dir where the daemon keeps a
// random token for local CLI commands (mode 0600, new on every start). The
// admin endpoints accept it besides server.admin_token, so `switchboard
// pairing list` and `status` work against a daemon listening off loopback
// (in a container, on 0.0.0.0) without a configured token: whoever can read
// the data directory can read the database anyway.
const AdminTokenFile = "admin.token"

// writeLocalToken creates a fresh token and writes it atomically to
// <data_dir>/admin.token. It returns "" (and logs) when that fails; the
// admin endpoints then need server.admin_token as before.
func (d *Daemon) writeLocalToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		d.log.Warn("no local admin token", "err", err)
		return ""
	}
	tok := hex.EncodeToString(b[:])
	dir := d.config().ResolvePath(d.config().Bot.DataDir)
	// With storage.backend postgres nothing else creates the data dir.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		d.log.Warn("could not create the data dir for the local admin token; CLI commands need server.admin_token", "err", err)
		return ""
	}
	if err := writeFile0600(filepath.Join(dir, AdminTokenFile), []byte(tok+"\n")); err != nil {
		d.log.Warn("could not write the local admin token; CLI commands need server.admin_token", "err", err)
		return ""
	}
	return tok
}

func writeFile0600(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".admin.token-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
