package main

// Issue 31 part 2: deploy/Dockerfile.exec, the image variant with
// bubblewrap. Without a Docker engine, TestExecImageLayout checks what can
// be checked from the file: the runtime stage's layout is the main image's
// (same COPY, ENV, USER, CMD…), the packages exec needs are installed, the
// image's default config (its `config set` lines over config.yaml) is valid
// and enables exec; and, as root, that the daemon running as the image's
// non-root uid 65532 runs a command through bwrap (user namespaces without
// privileges, as in the container).

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

var execSetRe = regexp.MustCompile(`/out/switchboard -c /out/config\.yaml config set (\S+) '?([^' ]+)'?`)

// runtimeLines are the lines of a Dockerfile's last stage that shape the
// image (COPY, ENV, VOLUME, WORKDIR, USER, EXPOSE, ENTRYPOINT, CMD,
// HEALTHCHECK), and every line of the file.
func runtimeLines(t *testing.T, path string) (stage, all []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		all = append(all, line)
		if strings.HasPrefix(line, "FROM ") {
			stage = nil
			continue
		}
		for _, k := range []string{"COPY ", "ENV ", "VOLUME ", "WORKDIR ", "USER ", "EXPOSE ", "ENTRYPOINT ", "CMD ", "HEALTHCHECK "} {
			if strings.HasPrefix(line, k) {
				stage = append(stage, line)
			}
		}
	}
	return stage, all
}

func TestExecImageLayout(t *testing.T) {
	mainStage, mainAll := runtimeLines(t, "../../Dockerfile")
	execStage, execAll := runtimeLines(t, "../../deploy/Dockerfile.exec")
	if !slices.Equal(mainStage, execStage) {
		t.Errorf("the exec image's layout differs from the main image's:\n main: %q\n exec: %q", mainStage, execStage)
	}
	var froms, sets [][]string
	var apt string
	for _, l := range execAll {
		if strings.HasPrefix(l, "FROM ") {
			froms = append(froms, strings.Fields(l))
		}
		if m := execSetRe.FindStringSubmatch(l); m != nil {
			sets = append(sets, m[1:])
		}
		if strings.Contains(l, "apt-get install") {
			apt = l
		}
	}
	if len(froms) != 2 || froms[0][1] != firstFrom(mainAll) || !strings.HasPrefix(froms[1][1], "debian:bookworm-slim") {
		t.Errorf("stages %q: want the main image's build stage, then debian:bookworm-slim", froms)
	}
	for _, pkg := range []string{"bubblewrap", "python3", "coreutils", "util-linux", "--no-install-recommends"} {
		if !strings.Contains(apt, " "+pkg) {
			t.Errorf("apt-get install lacks %s: %q", pkg, apt)
		}
	}

	// The image's default config: config.yaml with the `config set` lines.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	src, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, src, 0o600); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv()
	for _, s := range sets {
		if r := runBin(t, env, "-c", cfg, "config", "set", s[0], s[1]); r.code != 0 {
			t.Fatalf("config set %s %s: %s", s[0], s[1], r.stderr)
		}
	}
	if r := runBin(t, env, "-c", cfg, "config", "validate"); r.code != 0 {
		t.Fatalf("the image's config is invalid: %s", r.stderr)
	}
	if r := runBin(t, env, "-c", cfg, "config", "get", "agent.tools"); !strings.Contains(r.stdout, "exec") {
		t.Errorf("the image's config does not enable exec: %q", r.stdout)
	}

	// The daemon as the image's uid 65532 runs a command through bwrap.
	if os.Getuid() != 0 {
		t.Skip("the rest needs root, to run the binary as the image's uid 65532")
	}
	haveBwrap(t)
	llm := fakellm.Start(t, execScript(func(string) string { return "id -u; python3 -c 'print(6*7)'; ls /data 2>&1" }))
	home := t.TempDir()
	for _, d := range []string{filepath.Dir(home), home} { // t.TempDir's are 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(home, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	runCfg := filepath.Join(home, "config.yaml")
	body := fmt.Sprintf("bot: {data_dir: %s}\nllm: {base_url: %s, api_key: x}\npersonas: {dir: %s/personas}\n"+
		"agent: {tools: [exec]}\nexec: {approval: false, temp_dir: /tmp}\nserver: {listen: 127.0.0.1:0}\n", data, llm.URL, data)
	if err := os.WriteFile(runCfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(home, "switchboard") // binPath's directory is 0700
	b, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", runCfg, "ask", "RUN image")
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + data}
	cmd.Dir = data
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	got := string(out)
	if err != nil || !strings.Contains(got, "stdout:\n65534\n42\n") || !strings.Contains(got, "No such file") {
		t.Fatalf("ask as uid 65532: %v\n%s", err, got)
	}
}

func firstFrom(lines []string) string {
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "FROM" {
			return f[1]
		}
	}
	return ""
}
