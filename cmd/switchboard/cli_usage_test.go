package main

// Binary-level tests for issue 14 (items 1, 6, 7, 8, 9) and issue 13's two
// findings: each asserts the exit code and the line a person reads.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hermeticEnv is cleanEnv without any SWITCHBOARD_* variable and with a
// private user config dir, so the config lookup sees only what a test puts
// there.
func hermeticEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	var out []string
	for _, kv := range cleanEnv() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SWITCHBOARD_") || k == "XDG_CONFIG_HOME" || k == "HOME" {
			continue
		}
		out = append(out, kv)
	}
	home := t.TempDir()
	out = append(out, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	return append(out, extra...)
}

// runIn runs the binary in dir.
func runIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitHang)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env, cmd.Dir = env, dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

// lastLine is the last line of s: the error a failing command ends with
// (the first is the "using config …" note).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func expect(t *testing.T, r result, code int, line, want string) {
	t.Helper()
	if r.code != code || !strings.Contains(line, want) {
		t.Fatalf("exit %d (want %d), line %q does not contain %q\nstdout: %s\nstderr: %s", r.code, code, line, want, r.stdout, r.stderr)
	}
}

// Issue 14 item 1: a config file named with --config, on the command line
// or in SWITCHBOARD_CONFIG must exist.
func TestBinaryNamedConfigMustExist(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"validate --config", nil, []string{"config", "validate", "-c", "nonexist.yaml"}, "config file nonexist.yaml does not exist (named by --config)"},
		{"validate FILE", nil, []string{"config", "validate", "nonexist.yaml"}, "config file nonexist.yaml does not exist (named by the command line)"},
		{"run --config", nil, []string{"run", "-c", "nonexist.yaml", "--listen", "127.0.0.1:0"}, "config file nonexist.yaml does not exist"},
		{"env", []string{"SWITCHBOARD_CONFIG=nonexist.yaml"}, []string{"run"}, "config file nonexist.yaml does not exist (named by SWITCHBOARD_CONFIG)"},
		{"jobs list", []string{"SWITCHBOARD_CONFIG=" + filepath.Join(dir, "gone.yaml")}, []string{"jobs", "list"}, "gone.yaml does not exist"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runIn(t, dir, hermeticEnv(t, tt.env...), tt.args...)
			expect(t, r, 2, firstLine(r.stderr), tt.want)
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the commands created %v", entries)
	}
}

// Issue 14 item 1: without a named file the lookup order is ./config.yaml,
// then <user config dir>/switchboard/config.yaml, then the defaults; every
// command says which file it used.
func TestBinaryConfigLookupOrder(t *testing.T) {
	env := hermeticEnv(t)
	var xdg string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "XDG_CONFIG_HOME="); ok {
			xdg = v
		}
	}
	userCfg := filepath.Join(xdg, "switchboard", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(userCfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(userCfg, []byte("bot:\n  name: FromUserDir\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	r := runIn(t, cwd, env, "config", "get", "bot.name")
	expect(t, r, 0, r.stdout, "FromUserDir")
	expect(t, r, 0, firstLine(r.stderr), "using config "+userCfg+" (found by lookup)")

	local := filepath.Join(cwd, "config.yaml")
	if err := os.WriteFile(local, []byte("bot:\n  name: FromWorkingDir\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runIn(t, cwd, env, "config", "get", "bot.name")
	expect(t, r, 0, r.stdout, "FromWorkingDir")
	expect(t, r, 0, firstLine(r.stderr), "using config "+local)

	if err := os.Remove(userCfg); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	r = runIn(t, empty, env, "config", "validate")
	expect(t, r, 0, firstLine(r.stderr), "no config file found (looked for config.yaml, "+userCfg)
	expect(t, r, 0, r.stdout, "the built-in defaults are valid")
}

// Issue 14 item 1: read-only commands never create a data directory; they
// say there is no data yet (where the old binary printed "no jobs"). config,
// personas and prompt work before the first start, still creating nothing
// (prompt used to create ./data and ./personas).
func TestBinaryReadOnlyCommandsCreateNoData(t *testing.T) {
	cwd, scratch := t.TempDir(), t.TempDir()
	env := hermeticEnv(t, "TMPDIR="+scratch)
	worksWithoutData := map[string]string{"config": "Switchboard", "personas": "assistant", "prompt": "# persona: assistant"}
	for _, args := range [][]string{
		{"jobs", "list"}, {"pairing", "list"}, {"sessions", "list"}, {"sessions", "show", "x"},
		{"sessions", "export", "x"}, {"audit"}, {"config", "get", "bot.name"}, {"personas", "list"},
		{"prompt", "--target", "telegram:12345"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := runIn(t, cwd, env, args...)
			if want, ok := worksWithoutData[args[0]]; ok {
				expect(t, r, 0, r.stdout, want)
			} else {
				expect(t, r, 1, lastLine(r.stderr), "no data yet: data/switchboard.db does not exist")
			}
			if _, err := os.Stat(filepath.Join(cwd, "data")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%v created the data directory (stat: %v)", args, err)
			}
			if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
				t.Fatalf("%v created %v in the working directory", args, entries)
			}
			if entries, _ := os.ReadDir(scratch); len(entries) != 0 {
				t.Fatalf("%v left %v behind in TMPDIR", args, entries)
			}
		})
	}
}

// Issue 14 item 7: every usage mistake exits 2 with one sentence naming the
// command (and its usage), never cobra's terse text.
func TestBinaryUsageMistakesExit2(t *testing.T) {
	cfg := writeConfig(t, "bot:\n  data_dir: ./data\nserver:\n  listen: \"\"\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, "unknown command \"nosuch\" for `switchboard`"},
		{[]string{"jobz", "list"}, "unknown command \"jobz\" for `switchboard` (did you mean \"jobs\"?)"},
		{[]string{"jobs"}, "`switchboard jobs` needs a subcommand: delete, list, pause, resume, run"},
		{[]string{"jobs", "nosuch"}, "unknown command \"nosuch\" for `switchboard jobs`"},
		{[]string{"jobs", "run"}, "`switchboard jobs run` needs NAME; usage: switchboard jobs run NAME"},
		{[]string{"config", "set", "llm.model"}, "`switchboard config set` needs VALUE"},
		{[]string{"pairing", "approve", "A", "B"}, "`switchboard pairing approve` takes CODE only, but got 2 arguments"},
		{[]string{"status", "extra"}, "`switchboard status` takes no arguments, but got \"extra\""},
		{[]string{"status", "--nope"}, "`switchboard status` has no flag --nope"},
		{[]string{"audit", "-z"}, "`switchboard audit` has no flag -z"},
		{[]string{"audit", "--limit", "lots"}, "invalid value \"lots\" for \"--limit\""},
		{[]string{"audit", "--since"}, "--since needs a value"},
		{[]string{"ask"}, "`switchboard ask` needs \"text\""},
		{[]string{"prompt"}, "`switchboard prompt` needs --target"},
		{[]string{"config", "validate", "a.yaml", "b.yaml"}, "`switchboard config validate` takes [FILE] only, but got 2 arguments"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runBin(t, hermeticEnv(t), append([]string{"--config", cfg}, tt.args...)...)
			expect(t, r, 2, firstLine(r.stderr), "switchboard: "+tt.want)
			if strings.Contains(r.stderr, "arg(s)") || strings.Contains(r.stderr, "Usage:") {
				t.Fatalf("cobra's terse text or the whole usage leaked: %s", r.stderr)
			}
		})
	}
}

// Issue 14 item 7: `status` with the daemon stopped says so in a sentence
// (not a raw dial error); exit 1 (not a usage mistake).
func TestBinaryStatusDaemonStopped(t *testing.T) {
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf("bot:\n  data_dir: ./data\nserver:\n  listen: %s\n", addr))
	r := runBin(t, hermeticEnv(t), "--config", cfg, "status")
	expect(t, r, 1, lastLine(r.stderr), "switchboard: the daemon is not running: nothing answers at "+addr)
	if strings.Contains(r.stderr, "dial tcp") {
		t.Fatalf("raw dial error: %s", r.stderr)
	}
	r = runBin(t, hermeticEnv(t), "--config", cfg, "healthcheck")
	expect(t, r, 1, lastLine(r.stderr), "the daemon is not running")
}

// Issue 14 item 9: --version works as a flag; `config set` of a secret in
// plain text warns and suggests the ${VAR} form; a reference does not warn.
func TestBinaryVersionFlagAndPlaintextSecretWarning(t *testing.T) {
	r := runBin(t, hermeticEnv(t), "--version")
	expect(t, r, 0, firstLine(r.stdout), "switchboard ")

	cfg := writeConfig(t, "bot:\n  name: Bot\n")
	r = runBin(t, hermeticEnv(t), "--config", cfg, "config", "set", "llm.api_key", "sk-plain-123")
	expect(t, r, 0, r.stderr, "warning: llm.api_key is now stored in plain text in "+cfg)
	expect(t, r, 0, r.stderr, "switchboard config set llm.api_key '${OPENAI_API_KEY}'")
	if strings.Contains(r.stderr, "sk-plain-123") {
		t.Fatal("the warning repeats the secret")
	}
	r = runBin(t, hermeticEnv(t), "--config", cfg, "config", "set", "llm.api_key", "${OPENAI_API_KEY}")
	if r.code != 0 || strings.Contains(r.stderr, "warning") {
		t.Fatalf("a ${VAR} reference warned: exit %d %s", r.code, r.stderr)
	}
	r = runBin(t, hermeticEnv(t), "--config", cfg, "config", "set", "llm.model", "gpt-4o")
	if r.code != 0 || strings.Contains(r.stderr, "warning") {
		t.Fatalf("a non-secret key warned: exit %d %s", r.code, r.stderr)
	}
}

// Issue 14 item 8: a YAML syntax error is reported where it starts (line and
// column), with a hint for tabs.
func TestBinaryYAMLErrorsPointAtTheCause(t *testing.T) {
	filler := strings.Repeat("# comment\n", 17)
	for _, tt := range []struct {
		name, body, want string
	}{
		{"unclosed quote", "bot:\n  name: Bot\n" + filler + "llm:\n  model: \"gpt-4o\n  max_tokens: 100\n" + strings.Repeat("# more\n", 25) +
			"log:\n  level: \"info\"\n", "config.yaml:21:10: invalid YAML: the value quoted with \" that starts here is not closed"},
		{"unclosed single quote", "bot:\n  name: 'Bot\n  data_dir: ./data\n", "config.yaml:2:9: invalid YAML: the value quoted with ' that starts here"},
		{"tab indent", "bot:\n  name: Bot\n\tdata_dir: ./data\n", "config.yaml:3:1: invalid YAML: a tab character indents this line; YAML indentation must use spaces"},
		{"tab after spaces", "bot:\n  name: Bot\nllm:\n  \tmodel: x\n", "config.yaml:4:3: invalid YAML: a tab character"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runBin(t, hermeticEnv(t), "config", "validate", writeConfig(t, tt.body))
			expect(t, r, 2, firstLine(r.stderr), tt.want)
		})
	}
}

// Issue 14 item 6 and issue 13: unknown tool and persona names are
// validation errors with file:line and "did you mean" — at validate and at
// start (and `ask` creates no data when it refuses).
func TestBinaryUnknownToolsAndPersonasRefused(t *testing.T) {
	for _, tt := range []struct {
		name, body, persona, want string
	}{
		{"agent.tools", "agent:\n  tools: [current_time, nope, web_fetc]\n", "",
			"config.yaml:2: agent.tools[1]: unknown tool \"nope\"; known: current_time, delete_file, edit_file, exec, list_files, memory, read_file, schedule, send_file, send_message, skill, spawn, web_fetch, web_search, write_file"},
		{"agent.tools typo", "agent:\n  tools: [web_fetc]\n", "", "unknown tool \"web_fetc\" (did you mean \"web_fetch\"?)"},
		{"persona tools", "personas:\n  dir: ./personas\n", "---\ndescription: Z\ntools:\n  - current_tim\n---\nYou are Z.\n",
			"zebra.md:4: tools: unknown tool \"current_tim\" (did you mean \"current_time\"?)"},
		{"personas.default", "bot:\n  name: B\npersonas:\n  dir: ./personas\n  default: nobody\n", "",
			"config.yaml:5: personas.default: unknown persona \"nobody\"; known: assistant, buddy, reporter"},
		{"personas.default typo", "personas:\n  default: asistant\n", "", "config.yaml:2: personas.default: unknown persona \"asistant\" (did you mean \"assistant\"?)"},
		{"by_channel", "personas:\n  by_channel:\n    telegram: reporterr\n", "", "config.yaml:3: personas.by_channel.telegram: unknown persona \"reporterr\" (did you mean \"reporter\"?)"},
		{"by_target", "personas:\n  by_target:\n    \"slack:C1\": ghost\n", "", "config.yaml:3: personas.by_target.slack:C1: unknown persona \"ghost\""},
		{"job persona", "jobs:\n  - name: daily\n    schedule: \"0 9 * * *\"\n    prompt: hi\n    persona: ghost\n    deliver_to: [\"console:local\"]\n", "",
			"config.yaml:5: jobs[0].persona: unknown persona \"ghost\""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeConfig(t, tt.body)
			dir := filepath.Dir(cfg)
			if tt.persona != "" {
				if err := os.MkdirAll(filepath.Join(dir, "personas"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "personas", "zebra.md"), []byte(tt.persona), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := runBin(t, hermeticEnv(t), "config", "validate", cfg)
			expect(t, r, 2, r.stderr, tt.want)
			r = runBin(t, hermeticEnv(t), "--config", cfg, "ask", "--no-tools", "hi")
			expect(t, r, 2, r.stderr, tt.want)
			if _, err := os.Stat(filepath.Join(dir, "data")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("ask created the data directory although it refused the config: %v", err)
			}
		})
	}
}

// Issue 13: a personas.dir holding only the operator's zebra.md must not
// make every chat zebra: the built-in assistant resolves by name, and a
// file of a built-in's name overrides it.
func TestBinaryBuiltinPersonasAlwaysResolve(t *testing.T) {
	cfg := writeConfig(t, "bot:\n  data_dir: ./data\npersonas:\n  dir: ./personas\n  default: assistant\n  by_channel:\n    discord: reporter\nserver:\n  listen: \"\"\n")
	pdir := filepath.Join(filepath.Dir(cfg), "personas")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "zebra.md"), []byte("---\ndescription: Z\n---\nYou are a zebra.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, hermeticEnv(t), "config", "validate", cfg)
	expect(t, r, 0, r.stdout, "is valid")
	r = runBin(t, hermeticEnv(t), "--config", cfg, "prompt", "--target", "telegram:42")
	expect(t, r, 0, firstLine(r.stdout), "# persona: assistant ")
	r = runBin(t, hermeticEnv(t), "--config", cfg, "prompt", "--target", "discord:42")
	expect(t, r, 0, firstLine(r.stdout), "# persona: reporter ")
	r = runBin(t, hermeticEnv(t), "--config", cfg, "personas", "list")
	for _, n := range []string{"assistant", "buddy", "reporter", "zebra"} {
		expect(t, r, 0, r.stdout, n)
	}

	if err := os.WriteFile(filepath.Join(pdir, "assistant.md"), []byte("---\ndescription: Mine\n---\nYou are the operator's own assistant.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runBin(t, hermeticEnv(t), "--config", cfg, "prompt", "--target", "telegram:42")
	expect(t, r, 0, r.stdout, "You are the operator's own assistant.")
}

// Issue 14 item 6: a reload that names an unknown persona is rejected (the
// running config stays) with file:line; `jobs run nosuch` against the
// running daemon is a usage mistake told in a sentence.
func TestBinaryReloadRefusesUnknownPersona(t *testing.T) {
	addr := freePort(t)
	body := fmt.Sprintf("bot:\n  data_dir: ./data\nchannels:\n  console:\n    enabled: false\npersonas:\n  dir: ./personas\n  default: %%s\nserver:\n  listen: %s\n", addr)
	cfg := writeConfig(t, fmt.Sprintf(body, "assistant"))
	env := hermeticEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitHang)
	defer cancel()
	d := exec.CommandContext(ctx, binPath, "--config", cfg, "run")
	d.Env = env
	logs := &syncBuffer{}
	d.Stderr = logs
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = d.Process.Signal(syscall.SIGTERM)
		_ = d.Wait()
	}()
	waitFor(t, func() bool { return runBin(t, env, "--config", cfg, "healthcheck").code == 0 }, logs)

	r := runBin(t, env, "--config", cfg, "jobs", "run", "nosuch")
	expect(t, r, 2, lastLine(r.stderr), "switchboard: jobs: \"nosuch\": no such job")
	// The temp dir's random suffix in the "using config" line may hold
	// the digits 400, so only a status standing alone counts as a leak.
	if httpStatusWord.MatchString(r.stderr) {
		t.Fatalf("the HTTP status leaked: %s", r.stderr)
	}

	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(body, "asistant")), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = d.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool {
		return strings.Contains(logs.String(), "config.yaml:8: personas.default: unknown persona \\\"asistant\\\" (did you mean \\\"assistant\\\"?)")
	}, logs)
	r = runBin(t, env, "--config", cfg, "status")
	if r.code != 0 {
		t.Fatalf("the daemon did not keep running after the rejected reload: %d %s", r.code, r.stderr)
	}
}

// httpStatusWord finds an HTTP status code or reason standing alone.
var httpStatusWord = regexp.MustCompile(`\b(400|404|500)\b|Bad Request|Not Found|Internal Server Error`)

// syncBuffer is a bytes.Buffer safe for the process's writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond (each poll is a real process or a log read) up to
// waitHang.
func waitFor(t *testing.T, cond func() bool, logs fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(waitHang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met; daemon log:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHTTPStatusWord pins the leak check above: a status in the text is
// found, the digits of a temp dir's random suffix are not.
func TestHTTPStatusWord(t *testing.T) {
	for _, tc := range []struct {
		text string
		leak bool
	}{
		{"switchboard: jobs: control API: 400 Bad Request", true},
		{"switchboard: status 404", true},
		{"switchboard: using config /tmp/TestBinaryReloadRefusesUnknownPersona4114005802/001/config.yaml", false},
		{"switchboard: jobs: \"nosuch\": no such job", false},
	} {
		if got := httpStatusWord.MatchString(tc.text); got != tc.leak {
			t.Errorf("%q: leak %v, want %v", tc.text, got, tc.leak)
		}
	}
}
