package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/sandbox"
	"github.com/switchboard-bot/switchboard/memory"
)

// The exec tool (issue 31): one shell command over the chat's workspace, in
// the sandbox of internal/sandbox (bubblewrap: the system read-only, no
// network unless exec.network, a clean environment, rlimits, a wall-clock
// timeout). One call:
//
//   - snapshots the workspace as the turn sees it (the overlay's List and
//     Read: a file written earlier in the turn is there), which the sandbox
//     materializes at /workspace;
//   - runs the command; a call may ask for a shorter timeout than
//     exec.timeout, never a longer one;
//   - stages what the command changed (regular files new or modified,
//     files deleted) on the overlay with one Apply, so it is committed with
//     the turn, checked whole against the workspace bounds. A result over a
//     bound (the sandbox's write-back or the overlay's check) is a tool
//     error naming the bound, and nothing of it is staged. Symlinks, fifos,
//     devices and names the workspace cannot hold are never written back,
//     only listed;
//   - answers the model with the exit code, the time taken, stdout and
//     stderr (each cut to the head and the tail, the cut marked, so the
//     whole answer fits agent.observation_max_len) and the files changed
//     and deleted.
//
// Decisions:
//   - Without a working sandbox the call is refused (a permanent error that
//     says what to install); nothing runs unsandboxed unless the operator
//     set exec.sandbox: none.
//   - At most ExecOptions.MaxRunning commands run at once in the process;
//     more wait for a slot within the call's time. The call's own timeout
//     (agent.OwnTimeout) is exec.timeout plus execSlack, so
//     agent.tool_timeout does not cut a command exec.timeout allows.
//   - A failing command is a result (its exit code), not a tool error: the
//     model reads the output and decides. Exit codes the limits produce are
//     named: 152 (exec.cpu), 153 (the file size bound), 137 (killed; usually
//     exec.memory or exec.max_processes when the command did not kill
//     itself).
//   - exec has side effects: a failed call is never retried by the agent.
//   - Approval (exec.approval) is the daemon's policy, not the tool's.

// NameExec is the exec tool's name.
const NameExec = "exec"

// Exec defaults.
const (
	DefaultExecRunning = 4
	maxExecCommand     = 64 << 10
	// execSlack is the time a call has beyond the command's timeout: a
	// slot, the copy in and the write-back.
	execSlack     = 60 * time.Second
	maxListedExec = 50
)

// ExecRunner runs one command over a workspace snapshot; *sandbox.Runner is
// one.
type ExecRunner interface {
	Run(ctx context.Context, command string, files []sandbox.File, lim sandbox.Limits) (sandbox.Result, error)
	Timeout() time.Duration
}

// ExecOptions configures NewExec; zero fields take the defaults.
type ExecOptions struct {
	Runner ExecRunner // required
	// Network says whether commands reach the network (exec.network); it
	// only changes what the tool's description tells the model.
	Network bool
	// MaxOutput bounds the answer in characters (DefaultFilesOutput); set it
	// to agent.observation_max_len so the cut keeps the tail too.
	MaxOutput int
	// MaxRunning is how many commands run at once (DefaultExecRunning).
	MaxRunning int
}

// Exec is the exec tool.
type Exec struct {
	o     ExecOptions
	slots chan struct{}
}

// NewExec returns the exec tool.
func NewExec(o ExecOptions) *Exec {
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultFilesOutput
	}
	if o.MaxRunning <= 0 {
		o.MaxRunning = DefaultExecRunning
	}
	return &Exec{o: o, slots: make(chan struct{}, o.MaxRunning)}
}

type execArgs struct {
	Command string `json:"command" jsonschema:"The shell command (run with /bin/sh -c in /workspace, the chat's files)."`
	Timeout int    `json:"timeout,omitempty" jsonschema:"Seconds the command may run, at most the configured limit (the default)."`
}

var execSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[execArgs](func(p map[string]*jsonschema.Schema) {
		p["command"].MinLength = jsonschema.Ptr(1)
		p["command"].MaxLength = jsonschema.Ptr(maxExecCommand)
		p["timeout"].Minimum = jsonschema.Ptr(1.0)
	})
})

// Name implements agent.Tool.
func (*Exec) Name() string { return NameExec }

// Description implements agent.Tool.
func (t *Exec) Description() string {
	net := "There is no network access."
	if t.o.Network {
		net = "The network is reachable."
	}
	limit := ""
	if t.o.Runner != nil {
		limit = fmt.Sprintf(" within %s", t.o.Runner.Timeout())
	}
	return "Run a shell command in a sandbox over this chat's workspace, mounted at /workspace (the working directory). " +
		"A shell, coreutils and python3 are there; the system is read-only. " + net +
		" Files the command creates, changes or deletes in /workspace are saved to the workspace; nothing else is kept. " +
		"The command must finish" + limit + "; background processes are killed when it ends. " +
		"Returns the exit code, stdout and stderr (long output cut in the middle) and the files changed."
}

// Schema implements agent.Tool.
func (*Exec) Schema() json.RawMessage { return execSchema() }

// CallTimeout implements agent.OwnTimeout: exec.timeout plus the time to
// copy the workspace in and out.
func (t *Exec) CallTimeout() time.Duration {
	if t.o.Runner == nil {
		return 0
	}
	return t.o.Runner.Timeout() + execSlack
}

// Call implements agent.Tool.
func (t *Exec) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a execArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", agent.Permanent(fmt.Errorf("%s: %w", NameExec, err))
	}
	if strings.TrimSpace(a.Command) == "" {
		return "", agent.Permanent(fmt.Errorf("%s: command is empty", NameExec))
	}
	if a.Timeout < 0 {
		return "", agent.Permanent(fmt.Errorf("%s: timeout must be a positive number of seconds", NameExec))
	}
	if t.o.Runner == nil {
		return "", agent.Permanent(fmt.Errorf("%s: no sandbox is configured", NameExec))
	}
	files, err := turnFiles(ctx, NameExec)
	if err != nil {
		return "", err
	}
	snap, err := snapshot(ctx, files)
	if err != nil {
		return "", fileErr(NameExec, err)
	}
	select {
	case t.slots <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("%s: waited for a free slot (%d commands run at once): %w", NameExec, cap(t.slots), ctx.Err())
	}
	defer func() { <-t.slots }()
	if a.Timeout > 0 {
		ctx = sandbox.WithTimeout(ctx, time.Duration(a.Timeout)*time.Second)
	}
	lim := files.Limits()
	res, err := t.o.Runner.Run(ctx, a.Command, snap, sandbox.Limits{MaxBytes: lim.MaxBytes, MaxFiles: lim.MaxFiles, MaxFile: lim.MaxFile})
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			return "", agent.Permanent(fmt.Errorf("%s: refused, nothing was run: %w", NameExec, err))
		}
		return "", fmt.Errorf("%s: %w", NameExec, err)
	}
	if res.Refused != "" {
		return "", agent.Permanent(fmt.Errorf("%s: the command ran (%s) but its files were not saved: %s; nothing of it was written back\n%s",
			NameExec, exitText(res, t.timeout(a)), res.Refused, t.streams(res, 0)))
	}
	change, ignored := writeBackChange(res)
	if !change.Empty() {
		if err := files.Apply(ctx, change); err != nil {
			return "", fileErr(NameExec, fmt.Errorf("the command ran (%s) but its files were not saved: %w; nothing of it was written back\n%s",
				exitText(res, t.timeout(a)), err, t.streams(res, 0)))
		}
	}
	return t.render(res, a, change, ignored), nil
}

// timeout is the command's effective wall-clock limit.
func (t *Exec) timeout(a execArgs) time.Duration {
	d := t.o.Runner.Timeout()
	if a.Timeout > 0 && time.Duration(a.Timeout)*time.Second < d {
		d = time.Duration(a.Timeout) * time.Second
	}
	return d
}

// snapshot is the workspace as the turn sees it.
func snapshot(ctx context.Context, files *agent.TurnFiles) ([]sandbox.File, error) {
	list, err := files.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sandbox.File, 0, len(list))
	for _, fi := range list {
		data, info, err := files.Read(ctx, fi.Path)
		if err != nil {
			return nil, err
		}
		out = append(out, sandbox.File{Path: info.Path, Data: data, Mode: info.Mode})
	}
	return out, nil
}

// writeBackChange turns the sandbox's write-back into a workspace change;
// paths the workspace cannot hold are listed as ignored instead.
func writeBackChange(res sandbox.Result) (memory.WorkspaceChange, []string) {
	var c memory.WorkspaceChange
	ignored := append([]string(nil), res.Ignored...)
	for _, f := range res.Changed {
		p, err := memory.CleanPath(f.Path)
		if err != nil || p != f.Path {
			ignored = append(ignored, f.Path)
			continue
		}
		c.Writes = append(c.Writes, memory.FileWrite{Path: p, Content: f.Data, Mode: f.Mode})
	}
	for _, d := range res.Deleted {
		if p, err := memory.CleanPath(d); err == nil {
			c.Deletes = append(c.Deletes, p)
		}
	}
	return c, ignored
}

// exitText says how the command ended.
func exitText(res sandbox.Result, timeout time.Duration) string {
	took := res.Duration.Round(time.Millisecond)
	switch {
	case res.TimedOut:
		return fmt.Sprintf("timed out after %s and was killed with everything it started, exit code %d", timeout, res.ExitCode)
	case res.ExitCode == 152:
		return fmt.Sprintf("exit code 152: CPU time limit (exec.cpu) reached, after %s", took)
	case res.ExitCode == 153:
		return fmt.Sprintf("exit code 153: file size limit (workspace.max_file) reached, after %s", took)
	case res.ExitCode == 137:
		return fmt.Sprintf("exit code 137: killed (SIGKILL), after %s", took)
	}
	return fmt.Sprintf("exit code %d, after %s", res.ExitCode, took)
}

// render is the answer to the model.
func (t *Exec) render(res sandbox.Result, a execArgs, c memory.WorkspaceChange, ignored []string) string {
	var head strings.Builder
	head.WriteString(exitText(res, t.timeout(a)))
	head.WriteString("\n")
	if len(c.Writes) > 0 {
		names := make([]string, len(c.Writes))
		for i, w := range c.Writes {
			names[i] = fmt.Sprintf("%s (%s)", w.Path, memory.FormatBytes(int64(len(w.Content))))
		}
		head.WriteString("files saved: " + listNames(names) + "\n")
	}
	if len(c.Deletes) > 0 {
		head.WriteString("files deleted: " + listNames(c.Deletes) + "\n")
	}
	if len(ignored) > 0 {
		head.WriteString("not saved (not regular files, or names the workspace cannot hold): " + listNames(ignored) + "\n")
	}
	if len(c.Writes) == 0 && len(c.Deletes) == 0 {
		head.WriteString("no files changed\n")
	}
	return head.String() + t.streams(res, head.Len())
}

// streams renders stdout and stderr, each cut to its head and tail so the
// whole answer (used characters already) fits MaxOutput.
func (t *Exec) streams(res sandbox.Result, used int) string {
	budget := max(t.o.MaxOutput-used-60, 200)
	outB, errB := budget/2, budget/2
	// An empty or short stream lends its share to the other.
	if n := len([]rune(res.Stdout)); n < outB {
		errB += outB - n
		outB = n
	} else if n := len([]rune(res.Stderr)); n < errB {
		outB += errB - n
		errB = n
	}
	var b strings.Builder
	switch {
	case res.Stdout == "" && res.Stderr == "":
		b.WriteString("(no output)")
	default:
		if res.Stdout != "" {
			b.WriteString("stdout:\n" + withNewline(headTail(res.Stdout, outB)))
		}
		if res.Stderr != "" {
			b.WriteString("stderr:\n" + withNewline(headTail(res.Stderr, errB)))
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// headTail keeps the first and last characters of s within n, joined by a
// marker saying how much was cut.
func headTail(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	keep := max(n-40, 20)
	h, tl := keep/2, keep-keep/2
	cut := string(r[h : len(r)-tl])
	return string(r[:h]) + fmt.Sprintf("\n[… %d bytes cut …]\n", len(cut)) + string(r[len(r)-tl:])
}

func withNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// listNames joins names, at most maxListedExec of them.
func listNames(names []string) string {
	if len(names) <= maxListedExec {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxListedExec], ", ") + fmt.Sprintf(", … %d more", len(names)-maxListedExec)
}
