package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// Modes of a Runner (the config's exec.sandbox).
const (
	ModeBwrap = "bwrap" // the default: bubblewrap
	ModeNone  = "none"  // no sandbox; only when the operator says so
)

// Defaults, the config's exec and workspace defaults.
const (
	DefaultTimeout      = 60 * time.Second
	DefaultCPU          = 30 * time.Second
	DefaultMemory       = 512 << 20
	DefaultFileSize     = 10 << 20 // workspace.max_file
	DefaultMaxProcesses = 64
	DefaultMaxOutput    = 64 << 10
	DefaultTmpSize      = 64 << 20
	DefaultUID          = 65534 // nobody
)

// Options mirror the config's exec section (exec: {sandbox, network,
// timeout, cpu, memory, max_processes, max_output}) plus what only the
// wiring or a test sets. Zero values take the defaults.
type Options struct {
	Mode         string        // exec.sandbox: "bwrap" (default) or "none"
	Network      bool          // exec.network: share the host's network
	Timeout      time.Duration // exec.timeout: wall clock per command
	CPU          time.Duration // exec.cpu: RLIMIT_CPU, rounded up to seconds
	Memory       int64         // exec.memory: RLIMIT_AS in bytes
	FileSize     int64         // RLIMIT_FSIZE in bytes; default workspace.max_file (10 MiB)
	MaxProcesses int           // exec.max_processes: RLIMIT_NPROC inside the sandbox
	MaxOutput    int           // exec.max_output: bytes kept of stdout and of stderr each

	Bwrap   string // bubblewrap binary; default "bwrap" on PATH, then /usr/bin/bwrap
	Prlimit string // util-linux prlimit, run inside the sandbox; default /usr/bin/prlimit
	TempDir string // where run directories are made; default os.TempDir()
	TmpSize int64  // size of the sandbox's private /tmp (a tmpfs); default 64 MiB
	// UID and GID are the host ids bubblewrap runs as when the daemon runs
	// as root (default 65534, nobody; a dedicated unused id is better). A
	// daemon that is not root runs it as itself.
	UID, GID int
	Logger   *slog.Logger
}

// Runner runs commands over workspace snapshots. It is safe for concurrent
// use; it holds no state across runs but the cached result of its check.
type Runner struct {
	o       Options
	log     *slog.Logger
	asRoot  bool     // the daemon is root: bwrap runs as o.UID:o.GID
	sysArgs []string // how the host's /usr, /bin, /lib… appear inside

	mu sync.Mutex
	ok bool // a check passed; a failed one is retried on the next run
}

// New validates o and returns a Runner. It never fails for a missing or
// broken bubblewrap (Check and Run report that, saying what to install);
// it fails for options that make no sense. Mode "none" logs a warning: such
// a runner runs commands as the daemon's own user, seeing all it can see.
func New(o Options) (*Runner, error) {
	if o.Mode == "" {
		o.Mode = ModeBwrap
	}
	if o.Mode != ModeBwrap && o.Mode != ModeNone {
		return nil, fmt.Errorf("sandbox: exec.sandbox is %q: want %q or %q", o.Mode, ModeBwrap, ModeNone)
	}
	if o.Timeout < 0 || o.CPU < 0 || o.Memory < 0 || o.FileSize < 0 || o.MaxProcesses < 0 ||
		o.MaxOutput < 0 || o.TmpSize < 0 || o.UID < 0 || o.GID < 0 {
		return nil, errors.New("sandbox: negative limit in exec options")
	}
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CPU == 0 {
		o.CPU = DefaultCPU
	}
	def(&o.Memory, DefaultMemory)
	def(&o.FileSize, DefaultFileSize)
	def(&o.TmpSize, DefaultTmpSize)
	if o.MaxProcesses == 0 {
		o.MaxProcesses = DefaultMaxProcesses
	}
	if o.MaxOutput == 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.Prlimit == "" {
		o.Prlimit = "/usr/bin/prlimit"
	}
	if !filepath.IsAbs(o.Prlimit) {
		return nil, fmt.Errorf("sandbox: prlimit path %q must be absolute", o.Prlimit)
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	// Never host root: the kernel exempts uid 0 from RLIMIT_NPROC.
	if o.UID == 0 {
		o.UID = DefaultUID
	}
	if o.GID == 0 {
		o.GID = DefaultUID
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runner{o: o, log: log.With("component", "sandbox"), asRoot: os.Geteuid() == 0}
	sweepStale(o.TempDir, time.Now(), r.log) // stale.go
	if o.Mode == ModeNone {
		r.log.Warn("exec.sandbox is none: commands run UNSANDBOXED as the daemon's user, " +
			"with its files, network and environment within reach; install bubblewrap and set exec.sandbox: bwrap")
	} else {
		r.sysArgs = systemBinds(o.Network)
	}
	return r, nil
}

// Mode is the runner's mode, "bwrap" or "none".
func (r *Runner) Mode() string { return r.o.Mode }

// bwrapPath finds the bubblewrap binary.
func (r *Runner) bwrapPath() (string, error) {
	if r.o.Bwrap != "" {
		return exec.LookPath(r.o.Bwrap)
	}
	if p, err := exec.LookPath("bwrap"); err == nil {
		return p, nil
	}
	return exec.LookPath("/usr/bin/bwrap")
}
