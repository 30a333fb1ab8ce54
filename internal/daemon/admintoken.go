package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-bot/switchboard/internal/opfile"
)

// AdminTokenFile is the file in bot.data_dir where the daemon keeps a
// random token for local CLI commands and the console's login (mode 0600).
// The admin endpoints accept it besides server.admin_token, so `switchboard
// pairing list` and `status` work against a daemon listening off loopback
// (in a container, on 0.0.0.0) without a configured token: whoever can read
// the data directory can read the database anyway.
//
// The token is made at the first start and kept across restarts, so an
// operator logs in with the same one until it is rotated: `switchboard
// token rotate` writes a new one to AdminTokenFile when the daemon is
// stopped, and to AdminTokenNextFile while it runs. A running daemon keeps
// the token it started with (the admin endpoints hold it), so the file the
// CLI reads keeps naming that one; the daemon adopts the new token at its
// next start, replacing AdminTokenFile. The token is never logged.
const AdminTokenFile = "admin.token"

// MinAdminTokenLen is the length below which a configured
// server.admin_token is warned about at start.
const MinAdminTokenLen = 24

// AdminTokenNextFile holds a token `switchboard token rotate` wrote while
// the daemon ran, for the daemon's next start.
const AdminTokenNextFile = "admin.token.next"

// writeLocalToken returns the local admin token for this start: a pending
// rotation adopted, else the token kept in <data_dir>/admin.token, else a
// new one written there. It returns "" (and logs) when that fails; the
// admin endpoints then need server.admin_token as before.
func (d *Daemon) writeLocalToken() string {
	if t := d.config().Server.AdminToken; t.IsSet() && len(t.Value()) < MinAdminTokenLen {
		// Wrong tokens are rate-limited, but a right one is never refused
		// (so guesses cannot lock the operator out): a short token's
		// strength is all that stands against guessing.
		d.log.Warn("server.admin_token is short and could be guessed; use a long random one, e.g. `openssl rand -hex 32`",
			"length", len(t.Value()), "recommended_min", MinAdminTokenLen)
	}
	dir := d.config().ResolvePath(d.config().Bot.DataDir)
	// With storage.backend postgres nothing else creates the data dir.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		d.log.Warn("could not create the data dir for the local admin token; CLI commands need server.admin_token", "err", err)
		return ""
	}
	tok, how, err := LoadLocalToken(dir)
	if err != nil {
		d.log.Warn("no local admin token: CLI commands and the console's login need server.admin_token until this is fixed", "err", err)
		return ""
	}
	switch how {
	case TokenRotated:
		d.log.Info("admin token rotated (switchboard token rotate): the console and the CLI use the new one", "file", filepath.Join(dir, AdminTokenFile))
	case TokenNew:
		d.log.Info("wrote a new admin token for the console and the CLI", "file", filepath.Join(dir, AdminTokenFile))
	}
	return tok
}

// How LoadLocalToken came by the token.
const (
	TokenKept    = "kept"    // the one in admin.token
	TokenRotated = "rotated" // admin.token.next, now admin.token
	TokenNew     = "new"     // none usable was there: a new one
)

// LoadLocalToken returns the admin token of data directory dir and how it
// came by it: a pending rotation (AdminTokenNextFile) becomes AdminTokenFile;
// else AdminTokenFile's token is kept (its mode tightened to 0600 if it was
// looser); else a new token is written there. A file that holds no token
// (empty, edited, larger than a token file can be) is replaced by a new one.
// Either file being anything but a regular file (a named pipe, a device) is
// an error naming it: it is neither read (a pipe would block the start for
// good) nor replaced (whoever put it there decides).
func LoadLocalToken(dir string) (tok, how string, err error) {
	cur, next := filepath.Join(dir, AdminTokenFile), filepath.Join(dir, AdminTokenNextFile)
	t, err := readToken(next)
	if err != nil {
		return "", "", err
	}
	if t != "" {
		if err := os.Rename(next, cur); err != nil {
			return "", "", fmt.Errorf("adopt the rotated admin token: %w", err)
		}
		return t, TokenRotated, os.Chmod(cur, 0o600)
	}
	_ = os.Remove(next) // unreadable or not a token: the rotation is lost, never half-used
	if t, err = readToken(cur); err != nil {
		return "", "", err
	}
	if t != "" {
		if fi, err := os.Stat(cur); err == nil && fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(cur, 0o600); err != nil {
				return "", "", fmt.Errorf("make %s private: %w", cur, err)
			}
		}
		return t, TokenKept, nil
	}
	t, err = writeNewToken(cur)
	return t, TokenNew, err
}

// ReadLocalToken returns the token in data directory dir's AdminTokenFile,
// as local CLI commands read it: "" when there is none (no file, one that
// cannot be read or holds no token), an error when it is not a regular file.
func ReadLocalToken(dir string) (string, error) {
	return readToken(filepath.Join(dir, AdminTokenFile))
}

// RotateLocalToken writes a new admin token for data directory dir and
// returns the file it wrote: AdminTokenNextFile when a daemon runs (it
// adopts it at its next start), else AdminTokenFile at once (and a pending
// rotation is dropped).
func RotateLocalToken(dir string, running bool) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the data dir %s: %w", dir, err)
	}
	if running {
		path := filepath.Join(dir, AdminTokenNextFile)
		_, err := writeNewToken(path)
		return path, err
	}
	path := filepath.Join(dir, AdminTokenFile)
	if _, err := writeNewToken(path); err != nil {
		return "", err
	}
	if err := os.Remove(filepath.Join(dir, AdminTokenNextFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("drop the pending token: %w", err)
	}
	return path, nil
}

// maxTokenFile bounds a token file's read: a token is 64 hex digits.
const maxTokenFile = 4 << 10

// readToken reads a token file: "" when it is missing, unreadable, larger
// than maxTokenFile or holds no token (64 hex digits). A file that is not a
// regular file is refused with an error that names it and says to remove
// it. The read never blocks (opfile: opened O_NONBLOCK, checked with fstat
// before a byte is read) and a symlink is followed.
func readToken(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", nil // missing (or a dangling link): no token
	}
	data, err := opfile.ReadFile(real, maxTokenFile)
	if errors.Is(err, opfile.ErrNotRegular) {
		return "", fmt.Errorf("%s: %w: remove it (rm %s); the daemon writes a new token file at its next start", path, err, path)
	}
	if err != nil {
		return "", nil
	}
	t := strings.TrimSpace(string(data))
	if len(t) != 64 {
		return "", nil
	}
	if _, err := hex.DecodeString(t); err != nil {
		return "", nil
	}
	return t, nil
}

// writeNewToken writes a fresh random token (32 bytes from crypto/rand, in
// hex) to path, atomically and 0600.
func writeNewToken(path string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make an admin token: %w", err)
	}
	tok := hex.EncodeToString(b[:])
	if err := writeFile0600(path, []byte(tok+"\n")); err != nil {
		return "", err
	}
	return tok, nil
}

// writeFile0600 writes data to a new temporary file in path's directory and
// renames it over path: whatever path was (a named pipe, a device) is never
// opened for writing.
func writeFile0600(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
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
