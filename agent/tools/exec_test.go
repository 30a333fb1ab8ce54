package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/internal/sandbox"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// execRig is a bolt store, one chat's turn overlay and the exec tool over a
// real bubblewrap sandbox.
type execRig struct {
	st    *bolt.Store
	chat  string
	files *agent.TurnFiles
	ctx   context.Context
	exec  *tools.Exec
}

// bwrapRunner is a real sandbox, or the test is skipped saying what to install.
func bwrapRunner(t *testing.T, o sandbox.Options) *sandbox.Runner {
	t.Helper()
	r, err := sandbox.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(context.Background()); err != nil {
		t.Skipf("skipped: no working bubblewrap here (%v); install it: apt-get install bubblewrap", err)
	}
	return r
}

func newExecRig(t *testing.T, limits memory.WorkspaceLimits, o sandbox.Options) *execRig {
	t.Helper()
	runner := bwrapRunner(t, o)
	st, err := bolt.Open(filepath.Join(t.TempDir(), "db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r := &execRig{st: st, chat: "telegram:42", exec: tools.NewExec(tools.ExecOptions{Runner: runner, MaxOutput: 2000})}
	r.files = agent.NewTurnFiles(st, r.chat, limits, nil)
	r.ctx = agent.WithCallInfo(context.Background(), agent.CallInfo{SessionKey: r.chat, Files: r.files})
	return r
}

// seed stores files as an earlier turn's commit would.
func (r *execRig) seed(t *testing.T, files map[string]string) {
	t.Helper()
	var c memory.WorkspaceChange
	for p, s := range files {
		c.Writes = append(c.Writes, memory.FileWrite{Path: p, Content: []byte(s)})
	}
	if err := r.st.ApplyFiles(context.Background(), r.chat, c, memory.WorkspaceLimits{}); err != nil {
		t.Fatal(err)
	}
}

// commit applies the overlay's staged change as the turn's commit does.
func (r *execRig) commit(t *testing.T) {
	t.Helper()
	turn := memory.Turn{ID: "t", Messages: []memory.Message{{Role: memory.RoleUser, Content: "x"}},
		Files: r.files.Change(), FileLimits: r.files.Limits()}
	if err := r.st.AppendTurn(context.Background(), r.chat, turn); err != nil {
		t.Fatal(err)
	}
}

func (r *execRig) run(t *testing.T, args map[string]any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return r.exec.Call(r.ctx, raw)
}

// stored is the chat's committed files.
func (r *execRig) stored(t *testing.T) map[string]string {
	t.Helper()
	list, err := r.st.ListFiles(context.Background(), r.chat)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, fi := range list {
		data, _, err := r.st.ReadFile(context.Background(), r.chat, fi.Path)
		if err != nil {
			t.Fatal(err)
		}
		out[fi.Path] = string(data)
	}
	return out
}

func TestExecChangesLandInTheTurnsCommit(t *testing.T) {
	r := newExecRig(t, memory.WorkspaceLimits{}, sandbox.Options{})
	r.seed(t, map[string]string{"in.txt": "hello\n", "gone.txt": "bye\n", "same.txt": "same\n"})
	// Written earlier in the same turn: exec must see it.
	if _, err := r.files.Write(r.ctx, "staged.txt", []byte("staged\n"), 0); err != nil {
		t.Fatal(err)
	}
	out, err := r.run(t, map[string]any{"command": "cat in.txt staged.txt; mkdir out && tr a-z A-Z < in.txt > out/up.txt; rm gone.txt; printf '#!/bin/sh\\n' > run.sh; chmod +x run.sh; echo oops >&2; exit 3"})
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	for _, want := range []string{"exit code 3", "stdout:\nhello\nstaged\n", "stderr:\noops", "files saved: out/up.txt (6 bytes), run.sh (10 bytes)", "files deleted: gone.txt"} {
		if !strings.Contains(out, want) {
			t.Errorf("answer lacks %q:\n%s", want, out)
		}
	}
	if got := r.stored(t); got["gone.txt"] != "bye\n" || got["out/up.txt"] != "" {
		t.Fatalf("files were written to the store before the turn's commit: %v", got)
	}
	r.commit(t)
	got := r.stored(t)
	want := map[string]string{"in.txt": "hello\n", "same.txt": "same\n", "staged.txt": "staged\n", "out/up.txt": "HELLO\n", "run.sh": "#!/bin/sh\n"}
	if len(got) != len(want) {
		t.Fatalf("stored files = %v, want %v", got, want)
	}
	for p, s := range want {
		if got[p] != s {
			t.Errorf("%s = %q, want %q", p, got[p], s)
		}
	}
	_, fi, err := r.st.ReadFile(context.Background(), r.chat, "run.sh")
	if err != nil || fi.Mode&0o111 == 0 {
		t.Errorf("run.sh lost its executable bit: %v %v", fi.Mode, err)
	}
}

func TestExecOverABoundSavesNothing(t *testing.T) {
	tests := []struct {
		name    string
		limits  memory.WorkspaceLimits
		command string
		want    string
	}{
		{"one file too big", memory.WorkspaceLimits{MaxFile: 1000, MaxBytes: 1 << 20, MaxFiles: 100},
			"echo small > ok.txt; head -c 5000 /dev/zero > big.bin", "workspace.max_file"},
		{"too many files", memory.WorkspaceLimits{MaxFiles: 5},
			"for i in 1 2 3 4 5 6 7; do echo $i > f$i; done", "workspace.max_files"},
		{"zip bomb unpacked", memory.WorkspaceLimits{MaxBytes: 1 << 20, MaxFile: 1 << 20, MaxFiles: 100},
			`python3 -c "
import zipfile
z = zipfile.ZipFile('bomb.zip', 'w', zipfile.ZIP_DEFLATED)
for i in range(20): z.writestr('b%d' % i, b'\0' * (4 << 20))
z.close()
z = zipfile.ZipFile('bomb.zip'); z.extractall('x')"; ls x | wc -l`, "workspace.max_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newExecRig(t, tt.limits, sandbox.Options{FileSize: 8 << 20})
			r.seed(t, map[string]string{"keep.txt": "keep"})
			_, err := r.run(t, map[string]any{"command": tt.command})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "not saved") {
				t.Fatalf("err = %v, want a refusal naming %s", err, tt.want)
			}
			var perm *agent.PermanentError
			if !errors.As(err, &perm) {
				t.Errorf("a bound refusal is retried: %T", err)
			}
			if c := r.files.Change(); c != nil {
				t.Errorf("staged despite the refusal: %+v", c)
			}
		})
	}
}

func TestExecOutputKeepsHeadAndTail(t *testing.T) {
	r := newExecRig(t, memory.WorkspaceLimits{}, sandbox.Options{})
	out, err := r.run(t, map[string]any{"command": "seq 1 100000"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "stdout:\n1\n2\n3\n") || !strings.Contains(out, "99999\n100000") || !strings.Contains(out, "bytes cut") {
		t.Errorf("want the head, the tail and the cut marked:\n%s", out)
	}
	if n := len([]rune(out)); n > 2000 {
		t.Errorf("answer is %d characters, over MaxOutput 2000", n)
	}
}

func TestExecTimeoutArgument(t *testing.T) {
	r := newExecRig(t, memory.WorkspaceLimits{}, sandbox.Options{Timeout: 30e9})
	if got := r.exec.CallTimeout(); got <= 30e9 {
		t.Errorf("CallTimeout = %s, want more than exec.timeout", got)
	}
	out, err := r.run(t, map[string]any{"command": "echo started; sleep 20 & sleep 25; echo never", "timeout": 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "timed out after 1s") || strings.Contains(out, "never") || !strings.Contains(out, "started") {
		t.Errorf("want a timeout after 1s with the output so far:\n%s", out)
	}
}

func TestExecLinksAreNeverSaved(t *testing.T) {
	r := newExecRig(t, memory.WorkspaceLimits{}, sandbox.Options{})
	out, err := r.run(t, map[string]any{"command": "ln -s /etc/passwd passwd; ln -s /workspace/x loop; mkfifo fifo; echo x > x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "not saved") || !strings.Contains(out, "passwd") || !strings.Contains(out, "fifo") {
		t.Errorf("the links and the fifo are not named as not saved:\n%s", out)
	}
	r.commit(t)
	if got := r.stored(t); len(got) != 1 || got["x"] != "x\n" {
		t.Errorf("stored = %v, want only x", got)
	}
}

func TestExecRefusedWithoutSandbox(t *testing.T) {
	runner, err := sandbox.New(sandbox.Options{Bwrap: "/nonexistent/bwrap"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := bolt.Open(filepath.Join(t.TempDir(), "db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	files := agent.NewTurnFiles(st, "telegram:1", memory.WorkspaceLimits{}, nil)
	ctx := agent.WithCallInfo(context.Background(), agent.CallInfo{SessionKey: "telegram:1", Files: files})
	out, err := tools.NewExec(tools.ExecOptions{Runner: runner}).Call(ctx, json.RawMessage(`{"command":"echo ran > proof"}`))
	if err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") || !strings.Contains(err.Error(), "nothing was run") {
		t.Fatalf("out %q, err %v: want a refusal saying what to install", out, err)
	}
	var perm *agent.PermanentError
	if !errors.As(err, &perm) {
		t.Errorf("refusal is retried: %T", err)
	}
	if files.Change() != nil {
		t.Error("something was staged")
	}
}

func TestExecWithoutWorkspaceRefuses(t *testing.T) {
	runner := bwrapRunner(t, sandbox.Options{})
	_, err := tools.NewExec(tools.ExecOptions{Runner: runner}).Call(context.Background(), json.RawMessage(`{"command":"true"}`))
	if err == nil || !strings.Contains(err.Error(), "no workspace") {
		t.Fatalf("err = %v", err)
	}
}

func TestExecEnvironmentIsClean(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-exec-test-secret")
	r := newExecRig(t, memory.WorkspaceLimits{}, sandbox.Options{})
	out, err := r.run(t, map[string]any{"command": "env; cat /proc/1/environ; id -u"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "sk-exec-test-secret") || strings.Contains(out, "OPENAI") {
		t.Errorf("the daemon's environment is visible inside:\n%s", out)
	}
}

// The schema exec shows the model is testdata/schemas/exec.json (as the
// other built-in tools', TestBuiltinToolSchemasUnchanged).
func TestExecSchemaUnchanged(t *testing.T) {
	got := tools.NewExec(tools.ExecOptions{}).Schema()
	want, err := os.ReadFile(filepath.Join("testdata", "schemas", "exec.json"))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := normalizeSchema(t, got), normalizeSchema(t, want); !reflect.DeepEqual(g, w) {
		t.Errorf("schema changed\n got: %s\nwant: %s", compact(t, got), compact(t, want))
	}
	if g, w := propertyOrder(t, got), propertyOrder(t, want); !slices.Equal(g, w) {
		t.Errorf("property order %v, want %v", g, w)
	}
}
