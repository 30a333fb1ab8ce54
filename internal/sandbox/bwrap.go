package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// sandboxID is the uid and gid the command has inside the sandbox.
const sandboxID = 65534

// ErrUnavailable is what Check and Run return (wrapped in an
// *UnavailableError) when the sandbox cannot run: exec is then refused.
var ErrUnavailable = errors.New("exec sandbox unavailable")

// UnavailableError says why the sandbox cannot run and what the operator
// installs or changes to fix it. errors.Is(err, ErrUnavailable) holds.
type UnavailableError struct {
	Reason string // what is wrong, one line
	Fix    string // what to do
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s: %s; fix: %s", ErrUnavailable, e.Reason, e.Fix)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

const fixInstall = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; " +
	"Alpine: apk add bubblewrap), or set exec.sandbox: none to run commands unsandboxed (not recommended)"

const fixUserns = "bubblewrap needs user namespaces: on the host allow them (sysctl user.max_user_namespaces > 0; " +
	"Debian's kernel.unprivileged_userns_clone=1; Ubuntu 24.04+: kernel.apparmor_restrict_unprivileged_userns=0 " +
	"or an AppArmor profile for bwrap); in Docker run the container with --security-opt seccomp=unconfined " +
	"--security-opt apparmor=unconfined (or --cap-add SYS_ADMIN, or --privileged)"

// Check reports whether commands can run: the bubblewrap binary and
// prlimit exist and a real sandbox runs `true`. It is the doctor check of
// exec; its error is an *UnavailableError naming the fix. Mode "none"
// only checks that /bin/sh exists.
func (r *Runner) Check(ctx context.Context) error {
	if r.o.Mode == ModeNone {
		if _, err := os.Stat("/bin/sh"); err != nil {
			return &UnavailableError{Reason: "exec.sandbox is none and /bin/sh is missing", Fix: "install a POSIX shell"}
		}
		return nil
	}
	if _, err := r.bwrapPath(); err != nil {
		return &UnavailableError{Reason: "bubblewrap (bwrap) not found", Fix: fixInstall}
	}
	if fi, err := os.Stat(r.o.Prlimit); err != nil || fi.IsDir() {
		return &UnavailableError{
			Reason: fmt.Sprintf("%s not found (it sets the sandbox's rlimits)", r.o.Prlimit),
			Fix:    "install util-linux (apt-get install util-linux), which provides prlimit",
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := r.run(ctx, "true", nil, Limits{}, true)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return err
		}
		return &UnavailableError{Reason: "a test sandbox failed: " + oneLine(err.Error()), Fix: fixUserns}
	}
	if res.ExitCode != 0 {
		msg := oneLine(res.Stderr)
		if msg == "" {
			msg = "exit code " + strconv.Itoa(res.ExitCode)
		}
		fix := fixUserns
		if !strings.Contains(msg, "namespace") && !strings.Contains(msg, "not permitted") &&
			!strings.Contains(msg, "Permission denied") {
			fix = "bubblewrap 0.8 or newer is needed (Debian 12+, Ubuntu 24.04+); see the message above"
		}
		return &UnavailableError{Reason: "bwrap cannot start a sandbox here: " + msg, Fix: fix}
	}
	r.mu.Lock()
	r.ok = true
	r.mu.Unlock()
	return nil
}

// ready runs Check once; a failure is retried on the next run, so
// installing bubblewrap needs no restart.
func (r *Runner) ready(ctx context.Context) error {
	r.mu.Lock()
	ok := r.ok
	r.mu.Unlock()
	if ok || r.o.Mode == ModeNone {
		return nil
	}
	return r.Check(ctx)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// etcFiles are the host's /etc entries a shell, coreutils and python need;
// everything else of /etc (passwd, shadow, the daemon's config if it lives
// there, ssh keys) stays out. passwd and group are generated per run.
var etcFiles = []string{
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/localtime", "/etc/mime.types", "/etc/python3", "/etc/terminfo",
}

// etcNetFiles join them when exec.network is on: name resolution and TLS roots.
var etcNetFiles = []string{
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf",
	"/etc/services", "/etc/protocols", "/etc/ssl", "/etc/ca-certificates", "/etc/pki",
}

// systemBinds are the bwrap arguments that show the host's system read-only:
// /usr, the top-level /bin, /sbin and /lib* (as the host has them: symlinks
// into /usr on a merged-/usr system, directories otherwise) and etcFiles.
func systemBinds(network bool) []string {
	args := []string{"--ro-bind", "/usr", "/usr"}
	for _, top := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(top)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(top); err == nil {
				args = append(args, "--symlink", target, top)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", top, top)
		}
	}
	etc := etcFiles
	if network {
		etc = append(append([]string(nil), etcFiles...), etcNetFiles...)
	}
	for _, p := range etc {
		if _, err := os.Stat(p); err == nil {
			args = append(args, "--ro-bind", p, p)
		}
	}
	// Python's sitecustomize on Debian points into /etc/python3.X.
	if matches, _ := filepath.Glob("/etc/python3.*"); len(matches) > 0 {
		for _, m := range matches {
			args = append(args, "--ro-bind", m, m)
		}
	}
	return args
}

// bwrapArgs is the whole bubblewrap command line for one run: base holds the
// generated passwd and group, work is the workspace.
func (r *Runner) bwrapArgs(base, work, command string, lim Limits) []string {
	id := strconv.Itoa(sandboxID)
	args := []string{
		"--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--hostname", "sandbox",
		"--uid", id, "--gid", id, "--disable-userns", "--cap-drop", "ALL",
	}
	if r.o.Network {
		args = append(args, "--share-net")
	}
	args = append(args, r.sysArgs...)
	args = append(args,
		"--ro-bind", filepath.Join(base, "passwd"), "/etc/passwd",
		"--ro-bind", filepath.Join(base, "group"), "/etc/group",
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.FormatInt(r.o.TmpSize, 10), "--tmpfs", "/tmp",
		"--bind", work, "/workspace", "--chdir", "/workspace",
		"--clearenv",
		"--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
		"--setenv", "HOME", "/workspace",
		"--setenv", "LANG", "C.UTF-8",
		"--setenv", "TMPDIR", "/tmp",
		"--setenv", "USER", "sandbox",
		"--info-fd", "3",
		"--",
		"/bin/sh", "-c", watchdogScript, "sandbox-watchdog",
	)
	return append(args, r.limitArgs(command, true, lim)...)
}

// watchdogScript runs first inside the sandbox: a background reader of fd
// 4, the read end of a pipe whose only write end the daemon holds. When the
// daemon dies — even in the milliseconds before bwrap arms its own
// --die-with-parent, a window in which a SIGKILLed daemon left bwrap and
// the command running for good — the read sees end of file and the
// watchdog kills every process of the sandbox's user in its pid namespace,
// which ends the sandbox. The command itself runs without fd 4. The
// watchdog is one more process against max_processes; when the command
// ends normally, the namespace's end takes the watchdog with it.
const watchdogScript = `(cat <&4 >/dev/null 2>&1; kill -KILL -1 2>/dev/null) &
exec 4<&-
exec "$@"`

// limitArgs wraps the shell command in prlimit: CPU seconds, address space,
// processes (inside the sandbox only), file size, no core dumps. Hard
// limits are set too, so the command cannot raise them.
func (r *Runner) limitArgs(command string, nproc bool, lim Limits) []string {
	cpu := int64((r.o.CPU + time.Second - 1) / time.Second)
	args := []string{
		r.o.Prlimit,
		// SIGXCPU at the soft limit (a shell reports 152), SIGKILL a
		// second later for a program that ignores it.
		"--cpu=" + strconv.FormatInt(cpu, 10) + ":" + strconv.FormatInt(cpu+1, 10),
		"--as=" + strconv.FormatInt(r.o.Memory, 10),
		"--fsize=" + strconv.FormatInt(fileSizeLimit(r.o.FileSize, lim), 10),
		"--core=0",
	}
	if nproc {
		args = append(args, "--nproc="+strconv.Itoa(r.o.MaxProcesses))
	}
	return append(args, "--", "/bin/sh", "-c", command)
}

// fileSizeLimit is the RLIMIT_FSIZE of a run: Options.FileSize, but always
// above workspace.max_file. At max_file itself, a command writing more
// would leave a file cut at exactly max_file bytes, which passes the bound
// and would be written back silently truncated; one byte more makes such a
// file break the bound, so the write-back refuses it by name.
func fileSizeLimit(size int64, lim Limits) int64 {
	if lim.MaxFile > 0 && size <= lim.MaxFile {
		return lim.MaxFile + 1
	}
	return size
}

func passwdFiles() (passwd, group []byte) {
	id := strconv.Itoa(sandboxID)
	return []byte("sandbox:x:" + id + ":" + id + ":sandbox:/workspace:/bin/sh\n"),
		[]byte("sandbox:x:" + id + ":\n")
}
