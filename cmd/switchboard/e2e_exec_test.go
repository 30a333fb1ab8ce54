package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Issue 31 part 2, on the built binary: a chat's model calls exec (scripted
// by fakellm: "RUN <name>" makes it call exec with that case's command, and
// it answers "OUT <name>" with the tool result and "DONE <name>"). Every
// attack of the issue is one Telegram chat; all run at once.

// execScript is the fakellm responder: the command of each "RUN <name>"
// message comes from cmds; after the tool result, the answer quotes it.
func execScript(cmds func(name string) string) fakellm.Responder {
	return func(r *fakellm.Request) fakellm.Response {
		text := r.LastUserText()
		name, ok := strings.CutPrefix(text, "RUN ")
		if !ok {
			return fakellm.Response{Content: "echo: " + text}
		}
		if last := r.LastMessage(); last.Role == "tool" {
			return fakellm.Response{Content: "OUT " + name + "\n" + fakellm.MessageText(last) + "\nDONE " + name}
		}
		args, _ := json.Marshal(map[string]string{"command": cmds(name)})
		return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "exec", Arguments: string(args)}}}
	}
}

// haveBwrap skips the test without a working bubblewrap.
func haveBwrap(t *testing.T) {
	t.Helper()
	out, err := exec.Command("bwrap", "--unshare-all", "--ro-bind", "/", "/", "true").CombinedOutput()
	if err != nil {
		t.Skipf("skipped: no working bubblewrap here (%v: %s); install it: apt-get install bubblewrap", err, out)
	}
}

// execMarker is a unique string a command carries, to find its processes.
func execMarker(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sbexec" + hex.EncodeToString(b)
}

// procsWith lists live host processes whose command line contains s.
func procsWith(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// execConfig is the daemon's config for these tests.
func execConfig(t *testing.T, llmURL, tgURL, addr, extra string) (cfg, dataDir string) {
	t.Helper()
	cfg = writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
  max_retries: 0
agent:
  tools: [exec]
  observation_max_len: 3000
  max_concurrent_turns: 32
access:
  mode: open
channels:
  console:
    enabled: false
  telegram:
    enabled: true
    token: ${SB_TG_TOKEN}
    api_url: %s
personas:
  dir: ./personas
server:
  listen: %s
workspace: {max_bytes: 4MiB, max_files: 50, max_file: 1MiB}
%s`, llmURL, tgURL, addr, extra))
	return cfg, filepath.Join(filepath.Dir(cfg), "data")
}

// answerOf waits for the bot's answer in chat that ends the case name.
func answerOf(t *testing.T, tg *faketelegram.Server, chat int64, name string, dump func() string) string {
	t.Helper()
	var got string
	awaitCond(t, "the answer of "+name, func() bool {
		for _, m := range tg.Sent(chat) {
			if strings.Contains(m.Plain, "DONE "+name) {
				got = m.Plain
				return true
			}
		}
		return false
	}, dump)
	return got
}

func TestBinaryExecAttacks(t *testing.T) {
	haveBwrap(t)
	mark := execMarker(t)
	tg := faketelegram.New(t, faketelegram.Options{})
	addr := freePort(t)
	var mu sync.Mutex
	cmds := map[string]string{}
	llm := fakellm.Start(t, execScript(func(name string) string { mu.Lock(); defer mu.Unlock(); return cmds[name] }))
	cfg, data := execConfig(t, llm.URL, tg.URL(), addr, "exec: {timeout: 8s, cpu: 3s, approval: false}\n")

	type attack struct {
		name, command string
		want          []string // all in the answer
		wantAny       []string // one of them in the answer
		not           []string // none in the answer
	}
	attacks := []attack{
		{name: "shadow", command: "cat /etc/shadow; echo rc=$?", want: []string{"rc=1", "No such file"}, not: []string{"root:"}},
		{name: "passwd", command: "cat /etc/passwd", want: []string{"sandbox"}, not: []string{"root:x:0"}},
		{name: "database", command: "ls " + data + "; cat " + data + "/switchboard.db | head -c 64; echo rc=$?",
			want: []string{"No such file"}},
		{name: "config", command: "cat " + cfg + "; echo rc=$?", want: []string{"No such file", "rc=1"}, not: []string{"api_key"}},
		{name: "admin-token", command: "cat " + data + "/admin.token; ls -a " + data + "; echo rc=$?", want: []string{"No such file"}},
		{name: "environment", command: "env; cat /proc/1/environ | tr '\\0' '\\n'",
			want: []string{"PATH=", "HOME=/workspace"}, not: []string{e2eKey, faketelegram.DefaultToken, "SB_"}},
		{name: "admin-api", command: "python3 -c \"import urllib.request as u; print(u.urlopen('http://" + addr + "/healthz', timeout=3).read())\"; echo rc=$?",
			want: []string{"rc=1"}, wantAny: []string{"Network is unreachable", "Connection refused", "Errno"}},
		{name: "model-endpoint", command: "python3 -c \"import urllib.request as u; print(u.urlopen('" + llm.URL + "/models', timeout=3).read())\"; echo rc=$?",
			want: []string{"rc=1"}, wantAny: []string{"Network is unreachable", "Connection refused", "Errno"}},
		{name: "fork-bomb", command: "bomb() { bomb | bomb & }; bomb; sleep 2; echo after # " + mark,
			wantAny: []string{"exit code", "timed out"}},
		{name: "alloc-20g", command: "python3 -c 'b = bytearray(20 * 1024**3)'; echo rc=$?", want: []string{"MemoryError", "rc=1"}},
		{name: "write-10g-one-file", command: "head -c 10G /dev/zero > big; echo rc=$?; ls -l big",
			want: []string{"rc=153", "1048576"}},
		{name: "write-10g-many-files", command: "i=0; while head -c 1048576 /dev/zero > f$i; do i=$((i+1)); done",
			want: []string{"not saved", "workspace.max_"}},
		{name: "loop-forever", command: "while :; do :; done", wantAny: []string{"exit code 152", "timed out"}},
		{name: "background", command: "sh -c 'sleep 600; : " + mark + "' & echo started", want: []string{"started", "exit code 0"}},
		{name: "symlink", command: "ln -s /etc/passwd link; ln -s " + data + " data; echo made", want: []string{"made", "not saved", "link"}},
		{name: "zip-bomb", command: `python3 -c "
import zipfile
z = zipfile.ZipFile('bomb.zip', 'w', zipfile.ZIP_DEFLATED)
for i in range(20): z.writestr('b%d' % i, b'\0' * (4 << 20))
z.close()
print('zip', __import__('os').path.getsize('bomb.zip'))
zipfile.ZipFile('bomb.zip').extractall('x')"; echo rc=$?`, wantAny: []string{"File too large", "workspace.max_", "rc=1", "rc=153"}},
	}
	mu.Lock()
	for _, a := range attacks {
		cmds[a.name] = a.command
	}
	cmds["symlink-read"] = "cat link data/admin.token; ls -la; echo rc=$?"
	mu.Unlock()

	env := cleanEnv("SB_E2E_KEY="+e2eKey, "SB_TG_TOKEN="+faketelegram.DefaultToken)
	d := startDaemonBin(t, env, cfg, addr)
	for i, a := range attacks {
		tg.UserSays(int64(1000+i), "RUN "+a.name)
	}
	token, _ := os.ReadFile(filepath.Join(data, "admin.token"))
	for i, a := range attacks {
		got := answerOf(t, tg, int64(1000+i), a.name, d.dump)
		ok := true
		for _, w := range a.want {
			if !strings.Contains(got, w) {
				ok = false
				t.Errorf("%s: the answer lacks %q", a.name, w)
			}
		}
		if len(a.wantAny) > 0 && !containsAny(got, a.wantAny) {
			ok = false
			t.Errorf("%s: the answer has none of %q", a.name, a.wantAny)
		}
		for _, n := range append(a.not, strings.TrimSpace(string(token))) {
			if n != "" && strings.Contains(got, n) {
				ok = false
				t.Errorf("%s: the answer contains %q", a.name, n)
			}
		}
		if !ok || testing.Verbose() {
			if len(got) > 1500 {
				got = got[:700] + " […] " + got[len(got)-700:]
			}
			t.Logf("%s: %s", a.name, got)
		}
	}
	// The symlinks were not saved: the next command does not find them.
	symChat := int64(1000 + len(attacks) - 2)
	tg.UserSays(symChat, "RUN symlink-read")
	got := answerOf(t, tg, symChat, "symlink-read", d.dump)
	if !strings.Contains(got, "cat: link: No such file") || strings.Contains(got, "root:x:0") {
		t.Errorf("symlink read back: %s", got)
	}
	// Nothing a command started is still running: not the background
	// sleep, not a fork bomb child.
	awaitCond(t, "no process of the commands left", func() bool { return len(procsWith(mark)) == 0 },
		func() string { return strings.Join(procsWith(mark), "\n") })
	if logs := d.dump(); strings.Contains(logs, e2eKey) {
		t.Errorf("the key is in the daemon's output")
	}
}

func containsAny(s string, list []string) bool {
	for _, w := range list {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// 100 exec calls at once across 100 chats: each answers with its own
// file's content, none is lost or crossed.
func TestBinaryExecManyAtOnce(t *testing.T) {
	haveBwrap(t)
	tg := faketelegram.New(t, faketelegram.Options{})
	addr := freePort(t)
	llm := fakellm.Start(t, execScript(func(name string) string {
		return "echo " + name + " > mine.txt; cat mine.txt; ls | wc -l"
	}))
	cfg, _ := execConfig(t, llm.URL, tg.URL(), addr, "exec: {approval: false}\n")
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "SB_TG_TOKEN="+faketelegram.DefaultToken)
	d := startDaemonBin(t, env, cfg, addr)
	const n = 100
	for i := range n {
		tg.UserSays(int64(5000+i), fmt.Sprintf("RUN c%d", i))
	}
	for i := range n {
		name := fmt.Sprintf("c%d", i)
		got := answerOf(t, tg, int64(5000+i), name, d.dump)
		if !strings.Contains(got, "exit code 0") || !strings.Contains(got, "stdout:\n"+name+"\n1\n") ||
			!strings.Contains(got, "files saved: mine.txt") {
			t.Errorf("chat %d: %s", i, got)
		}
	}
}

// exec waits for /approve by default; the approved command runs.
func TestBinaryExecNeedsApproval(t *testing.T) {
	haveBwrap(t)
	tg := faketelegram.New(t, faketelegram.Options{})
	addr := freePort(t)
	llm := fakellm.Start(t, execScript(func(string) string { return "echo approved-and-ran" }))
	cfg, _ := execConfig(t, llm.URL, tg.URL(), addr, "")
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "SB_TG_TOKEN="+faketelegram.DefaultToken)
	d := startDaemonBin(t, env, cfg, addr)
	const chat = 77
	tg.UserSays(chat, "RUN hello")
	awaitCond(t, "the approval request", func() bool {
		for _, m := range tg.Sent(chat) {
			if strings.Contains(m.Plain, "Approval needed") && strings.Contains(m.Plain, "exec.approval is on") {
				return true
			}
		}
		return false
	}, d.dump)
	tg.UserSays(chat, "/approve")
	if got := answerOf(t, tg, chat, "hello", d.dump); !strings.Contains(got, "approved-and-ran") {
		t.Fatalf("answer %s", got)
	}
}

// SIGKILL of the daemon in the middle of a command leaves no process of
// the command behind.
func TestBinaryExecKilledDaemonLeavesNoOrphan(t *testing.T) {
	haveBwrap(t)
	mark := execMarker(t)
	tg := faketelegram.New(t, faketelegram.Options{})
	addr := freePort(t)
	llm := fakellm.Start(t, execScript(func(string) string { return "sleep 600 & sh -c 'sleep 700 # " + mark + "'; sleep 800 # " + mark }))
	cfg, _ := execConfig(t, llm.URL, tg.URL(), addr, "exec: {timeout: 10m, approval: false}\n")
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "SB_TG_TOKEN="+faketelegram.DefaultToken)
	d := startDaemonBin(t, env, cfg, addr)
	tg.UserSays(88, "RUN sleeper")
	// The inner shell's command line is "sh", "-c", "sleep 700 # MARK".
	awaitCond(t, "the command running", func() bool { return len(procsWith("-c\x00sleep 700 # "+mark)) == 1 }, d.dump)
	runDir := runDirOf(t, mark)
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	awaitCond(t, "no process of the command left after SIGKILL", func() bool { return len(procsWith(mark)) == 0 },
		func() string { return strings.Join(procsWith(mark), "\n") })
	// Its run directory (on /dev/shm: memory) is left; the next start
	// removes it.
	if _, err := os.Stat(runDir); err != nil {
		t.Fatalf("the run directory %s: %v", runDir, err)
	}
	startDaemonBin(t, env, cfg, addr)
	if _, err := os.Stat(runDir); !os.IsNotExist(err) {
		t.Errorf("the dead run's directory %s is still there after a restart (%v)", runDir, err)
	}
}

// runDirOf is the host directory of the sandbox whose command line holds mark.
func runDirOf(t *testing.T, mark string) string {
	t.Helper()
	for _, p := range procsWith(mark) {
		for _, f := range strings.Fields(p) {
			if dir, ok := strings.CutSuffix(f, "/workspace"); ok && strings.Contains(dir, "switchboard-exec-") {
				return dir
			}
		}
	}
	t.Fatalf("no sandbox with %s", mark)
	return ""
}

// exec.sandbox: none logs a warning at every start.
func TestBinaryExecSandboxNoneWarns(t *testing.T) {
	tg := faketelegram.New(t, faketelegram.Options{})
	addr := freePort(t)
	llm := fakellm.Start(t, execScript(func(string) string { return "true" }))
	cfg, _ := execConfig(t, llm.URL, tg.URL(), addr, "exec: {sandbox: none}\n")
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "SB_TG_TOKEN="+faketelegram.DefaultToken)
	for range 2 {
		d := startDaemonBin(t, env, cfg, addr)
		if logs := d.dump(); !strings.Contains(logs, "exec.sandbox is none: commands run UNSANDBOXED") {
			t.Fatalf("no warning at start:\n%s", logs)
		}
		d.stop(t)
	}
}
