// Package sandbox owns the runner behind the `exec` tool: one shell command
// over a snapshot of a chat's workspace, in a bubblewrap sandbox, with the
// changed files handed back within the workspace's bounds. It does not know
// where workspaces are stored or how a turn commits them; the exec tool
// and the daemon's wiring do.
//
// One Run:
//
//   - The snapshot ([]File: relative, clean paths; regular files only) is
//     written into a fresh 0700 directory under Options.TempDir and bound
//     read-write at /workspace, the command's working directory and $HOME.
//   - bwrap(1) runs `/bin/sh -c COMMAND` with every namespace unshared (user,
//     pid, mount, ipc, uts, cgroup, and network unless exec.network is on),
//     --die-with-parent, --new-session, --cap-drop ALL, nested user
//     namespaces disabled, uid/gid 65534 ("sandbox") inside. The host's /usr
//     and /bin, /sbin, /lib* (or their merged-/usr symlinks) are read-only;
//     of /etc only what a shell, coreutils and python need (alternatives,
//     ld.so.*, localtime, mime.types, python3*, terminfo; with the network
//     also resolv.conf, hosts, nsswitch.conf, ssl and CA files), plus a
//     generated passwd and group naming only the sandbox user: the host's
//     passwd, shadow, ssh keys, the daemon's data dir (database, admin token,
//     sockets), config and other chats' workspaces are never mounted. /tmp
//     is a private tmpfs of Options.TmpSize; /proc and /dev are the
//     sandbox's own. The environment is cleared to PATH, HOME, LANG, TMPDIR
//     and USER: no variable of the daemon's (API keys, tokens) is inside.
//   - Limits are rlimits set by util-linux prlimit(1) inside the sandbox,
//     soft and hard so the command cannot raise them: RLIMIT_CPU (exec.cpu;
//     SIGXCPU, exit 152, then SIGKILL a second later), RLIMIT_AS
//     (exec.memory: address space, not resident memory; a runtime that
//     reserves large virtual ranges, as the JVM or Go do, needs more),
//     RLIMIT_NPROC (exec.max_processes), RLIMIT_FSIZE (Options.FileSize,
//     default workspace.max_file, always at least Limits.MaxFile+1 so a
//     file cut by it breaks max_file and is refused, never saved
//     truncated; SIGXFSZ, exit 153) and no core dumps.
//     Since Linux 5.14 RLIMIT_NPROC is counted per user namespace, so each
//     sandbox has its own max_processes; but the kernel exempts processes
//     whose host uid is 0, so when the daemon runs as root, bwrap runs as
//     Options.UID:GID (default 65534) and the run's directory is handed to
//     that uid. A daemon that is not root runs bwrap as itself.
//   - exec.timeout is wall-clock. On timeout or when ctx is canceled the
//     sandbox's pid 1 is killed through a pidfd (never a reused pid); the
//     kernel then kills everything in its pid namespace and bwrap exits
//     only after that, so nothing the command started (background jobs,
//     setsid, double forks) outlives Run. A daemon that dies takes bwrap
//     with it (Pdeathsig), and bwrap the sandbox (--die-with-parent). Both
//     are armed a little after the fork, so two more guards close that
//     window (attacked: a daemon SIGKILLed 0–2 ms after bwrap appeared left
//     the sandbox running in 3 of 5 tries): a watchdog inside the sandbox
//     (watchdogScript) kills the sandbox's processes when the daemon's end of
//     a pipe closes, and the next Runner's sweep of dead runs (stale.go)
//     kills any process still naming a dead run's directory — a sandbox
//     whose init was left waiting while bwrap set it up.
//   - stdout and stderr are each kept to exec.max_output: the head and the
//     tail, joined by "[… N bytes cut …]"; invalid UTF-8 is replaced.
//   - Write-back: after the command, the directory is walked without
//     following links, statting before reading and stopping at the first
//     broken bound (workspace.max_files, max_file, max_bytes; a bound on
//     entries of any kind too), so a zip bomb costs neither memory nor a
//     long read. Regular files that differ from the snapshot (content or
//     executable bit) are Changed, snapshot files gone are Deleted;
//     symlinks, fifos, sockets and devices are never written back, only
//     listed in Ignored. A broken bound sets Result.Refused to its name and
//     nothing at all is written back. A canceled run writes nothing back.
//     The directory is removed after every run.
//
// The workspace directory's disk use while the command runs (each file is
// bounded by RLIMIT_FSIZE, their number is not) is measured every 100 ms
// (watch.go): past twice workspace.max_bytes (at least max_bytes + 64 MiB)
// in allocated blocks, or past the entries the write-back walks, the
// sandbox is killed and the result Refused, naming the bound. Between two
// measurements a command can still write what the disk takes in 100 ms, so
// put Options.TempDir on a tmpfs with a size (/dev/shm, or /tmp's tmpfs),
// which also makes materializing faster than a journaled disk.
//
// Run also takes a shorter wall-clock timeout from its context
// (WithTimeout): the exec tool's timeout argument.
//
// No sandbox, no exec: without a working bwrap, Run and Check return an
// *UnavailableError (errors.Is ErrUnavailable) that says what to install;
// Check is the doctor check (it runs `true` in a real sandbox). Nothing
// runs unsandboxed unless the operator sets exec.sandbox: none; such a
// Runner logs a warning when constructed and runs /bin/sh as the daemon's
// user in the workspace directory, with the clean environment, the
// timeout and the rlimits but RLIMIT_NPROC (outside a user namespace it
// would count the daemon's own threads).
//
// In Docker or another container, bubblewrap needs user namespaces: the
// default seccomp and AppArmor profiles of Docker forbid them, so run the
// container with --security-opt seccomp=unconfined --security-opt
// apparmor=unconfined (or --cap-add SYS_ADMIN, or --privileged); on the host
// user.max_user_namespaces must be above 0 (Debian's older kernels also
// need kernel.unprivileged_userns_clone=1, Ubuntu 24.04+
// kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile
// for bwrap). bubblewrap 0.8 or newer is needed (Debian 12, Ubuntu 24.04);
// the image needs /bin/sh, prlimit and whatever commands the bot should
// have (python3, coreutils).
package sandbox
