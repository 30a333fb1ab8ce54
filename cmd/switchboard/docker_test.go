package main

// Issue 14 item 3: the Docker image's defaults. TestImageLayoutWithoutDocker
// rebuilds the image's filesystem layout under a temp root from the
// Dockerfile itself (its `config set` lines, ENV, CMD and HEALTHCHECK) and
// runs the CLI there as `docker exec <c> switchboard …` would: no flags.
// TestDockerImage does the real thing and skips without a Docker engine.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// imageSpec is what the tests read from the Dockerfile.
type imageSpec struct {
	sets        [][2]string // config set KEY VALUE, in order
	env         map[string]string
	cmd         []string
	healthcheck []string
	dataChown   bool // /data copied with --chown to the runtime user
	user        string
}

var (
	setRe   = regexp.MustCompile(`/out/switchboard -c /out/config\.yaml config set (\S+) (\S+)`)
	envRe   = regexp.MustCompile(`^ENV (\S+)=(\S+)`)
	cmdRe   = regexp.MustCompile(`^CMD (\[.*\])`)
	hcRe    = regexp.MustCompile(`^\s*CMD (\[.*\])`)
	chownRe = regexp.MustCompile(`^COPY --from=build --chown=65532:65532 /out/data /data$`)
)

func readDockerfile(t *testing.T) imageSpec {
	t.Helper()
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec := imageSpec{env: map[string]string{}}
	sc := bufio.NewScanner(f)
	inHealth := false
	for sc.Scan() {
		line := sc.Text()
		if m := setRe.FindStringSubmatch(line); m != nil {
			spec.sets = append(spec.sets, [2]string{m[1], m[2]})
		}
		if m := envRe.FindStringSubmatch(line); m != nil {
			spec.env[m[1]] = m[2]
		}
		if chownRe.MatchString(line) {
			spec.dataChown = true
		}
		if u, ok := strings.CutPrefix(line, "USER "); ok {
			spec.user = u
		}
		if strings.HasPrefix(line, "HEALTHCHECK") {
			inHealth = true
		}
		if m := hcRe.FindStringSubmatch(line); m != nil && inHealth {
			if err := json.Unmarshal([]byte(m[1]), &spec.healthcheck); err != nil {
				t.Fatal(err)
			}
			inHealth = false
			continue
		}
		if m := cmdRe.FindStringSubmatch(line); m != nil {
			if err := json.Unmarshal([]byte(m[1]), &spec.cmd); err != nil {
				t.Fatal(err)
			}
		}
	}
	return spec
}

func TestImageLayoutWithoutDocker(t *testing.T) {
	spec := readDockerfile(t)
	if len(spec.sets) == 0 || spec.env["SWITCHBOARD_CONFIG"] != "/etc/switchboard/config.yaml" || len(spec.cmd) == 0 ||
		len(spec.healthcheck) < 2 || spec.healthcheck[1] != "healthcheck" || !spec.dataChown || spec.user != "65532:65532" {
		t.Fatalf("the Dockerfile lacks what the image needs: %+v", spec)
	}
	if data, err := os.ReadFile("../../.dockerignore"); err != nil || !strings.Contains(string(data), ".git") ||
		!strings.Contains(string(data), "**/data/") {
		t.Fatalf(".dockerignore must exclude .git and local data/: %v\n%s", err, data)
	}

	root := t.TempDir()
	in := func(p string) string { return filepath.Join(root, p) }
	// The image's config: the shipped config.yaml edited by the Dockerfile's
	// own `config set` lines, with image paths under root and a free port.
	cfgPath := in(spec.env["SWITCHBOARD_CONFIG"])
	shipped, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, shipped, 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	port = port[strings.LastIndex(port, ":")+1:]
	for _, kv := range spec.sets {
		val := kv[1]
		switch {
		case strings.HasPrefix(val, "/"):
			val = in(val)
		case kv[0] == "server.listen":
			val = "0.0.0.0:" + port
		}
		if r := runBin(t, hermeticEnv(t), "-c", cfgPath, "config", "set", kv[0], val); r.code != 0 {
			t.Fatalf("config set %s: %d %s", kv[0], r.code, r.stderr)
		}
	}
	dataDir := in("/data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := in("/usr/local/bin/switchboard")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if raw, err := os.ReadFile(binPath); err != nil || os.WriteFile(bin, raw, 0o755) != nil {
		t.Fatalf("copy the binary: %v", err)
	}

	// As the image's user when we can switch to it; otherwise as ourselves
	// (which is already not root).
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		cred = &syscall.Credential{Uid: 65532, Gid: 65532}
		for _, p := range []string{filepath.Dir(root), root, in("/etc"), in("/etc/switchboard"), in("/usr"), in("/usr/local"), in("/usr/local/bin")} {
			_ = os.Chmod(p, 0o755)
		}
		_ = os.Chmod(cfgPath, 0o644)
		if err := os.Chown(dataDir, 65532, 65532); err != nil {
			t.Fatal(err)
		}
		_ = os.Chown(filepath.Dir(root), 0, 0)
	} else {
		t.Logf("not root (uid %d): the commands run as this non-root user; the switch to the image's uid 65532 is skipped", os.Getuid())
	}
	env := hermeticEnv(t, "SWITCHBOARD_CONFIG="+cfgPath)
	exec1 := func(args ...string) result { // docker exec <c> switchboard ARGS (WORKDIR /data)
		t.Helper()
		return runAs(t, bin, cred, dataDir, env, args...)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	d := exec.CommandContext(ctx, bin, spec.cmd...)
	d.Env, d.Dir = env, dataDir
	if cred != nil {
		d.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	logs := &syncBuffer{}
	d.Stderr = logs
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = d.Process.Signal(syscall.SIGTERM)
			_ = d.Wait()
		}
	}()
	waitFor(t, func() bool { return exec1(spec.healthcheck[1:]...).code == 0 }, logs)

	r := exec1("pairing", "list")
	expect(t, r, 0, firstLine(r.stdout), "no pending pairing codes")
	expect(t, r, 0, firstLine(r.stderr), "using config "+cfgPath+" (named by SWITCHBOARD_CONFIG)")
	r = exec1("status")
	expect(t, r, 0, firstLine(r.stdout), "Switchboard status")
	r = exec1("jobs", "list")
	expect(t, r, 0, firstLine(r.stdout), "no jobs")
	r = exec1("personas", "list")
	expect(t, r, 0, r.stdout, "assistant")

	info, err := os.Stat(filepath.Join(dataDir, "admin.token"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("admin.token: %v %v", info, err)
	}
	for _, p := range []string{filepath.Join(dataDir, "switchboard.db"), filepath.Join(dataDir, "personas", "assistant.md")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the daemon did not write %s: %v", p, err)
		}
	}
	if _, err := os.Stat(in("/etc/switchboard/data")); err == nil {
		t.Fatal("a data directory appeared next to the config in /etc/switchboard")
	}

	_ = d.Process.Signal(syscall.SIGTERM)
	if err := d.Wait(); err != nil {
		t.Fatalf("the daemon did not stop cleanly: %v\n%s", err, logs.String())
	}
	stopped = true
	r = exec1("pairing", "list")
	expect(t, r, 0, firstLine(r.stdout), "no pending pairing codes")
	r = exec1("status")
	expect(t, r, 1, lastLine(r.stderr), "the daemon is not running")
	r = exec1(spec.healthcheck[1:]...)
	expect(t, r, 1, lastLine(r.stderr), "the daemon is not running")
}

// runAs runs bin in dir as the given user (nil = ourselves).
func runAs(t *testing.T, bin string, cred *syscall.Credential, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir = env, dir
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

// TestDockerImage builds the image and runs `pairing list` and `status` in
// it with docker exec. There is no Docker engine on the CI machines, so it
// skips there.
func TestDockerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker command on this machine: the image layout is covered by TestImageLayoutWithoutDocker")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("no Docker engine answers on this machine: the image layout is covered by TestImageLayoutWithoutDocker")
	}
	tag := fmt.Sprintf("switchboard-test:%d", time.Now().UnixNano())
	docker := func(args ...string) (string, error) {
		out, err := exec.Command("docker", args...).CombinedOutput()
		return string(out), err
	}
	if out, err := docker("build", "-t", tag, "../.."); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	defer docker("rmi", "-f", tag)
	id, err := docker("run", "-d", tag)
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, id)
	}
	id = strings.TrimSpace(id)
	defer docker("rm", "-f", id)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := docker("exec", id, "switchboard", "healthcheck"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			logs, _ := docker("logs", id)
			t.Fatalf("the container never became healthy:\n%s", logs)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, tt := range []struct{ args, want string }{
		{"pairing list", "no pending pairing codes"},
		{"status", "Switchboard status"},
	} {
		out, err := docker(append([]string{"exec", id, "switchboard"}, strings.Fields(tt.args)...)...)
		if err != nil || !strings.Contains(out, tt.want) {
			t.Fatalf("docker exec switchboard %s: %v\n%s", tt.args, err, out)
		}
	}
}
