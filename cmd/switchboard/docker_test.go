package main

// Issues 14 (item 3) and 28 (item 2): the Docker image's defaults.
// TestImageLayoutWithoutDocker rebuilds the image's filesystem layout under a
// temp root from the Dockerfile itself (its `config set` lines, COPY, ENV,
// CMD and HEALTHCHECK) and runs the CLI there as `docker exec <c>
// switchboard …` would: no flags, as uid 65532. TestDockerImage does the
// real thing and skips without a Docker engine.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// imageSpec is what the tests read from the Dockerfile.
type imageSpec struct {
	froms       []string          // base images, in order
	sets        [][2]string       // config set KEY VALUE on the image's default config, in order
	env         map[string]string // ENV
	copies      map[string]string // COPY --from=build: image path -> /out path
	chowned     map[string]bool   // image paths copied --chown=65532:65532
	dataDirs    []string          // the image paths of the /out/data tree made in the build stage
	cmd         []string
	healthcheck []string
	user        string
}

var (
	fromRe  = regexp.MustCompile(`^FROM (\S+)`)
	setRe   = regexp.MustCompile(`/out/switchboard -c /out/config\.yaml config set (\S+) (\S+)`)
	envRe   = regexp.MustCompile(`^ENV (\S+)=(\S+)`)
	cmdRe   = regexp.MustCompile(`^CMD (\[.*\])`)
	hcRe    = regexp.MustCompile(`^\s*CMD (\[.*\])`)
	copyRe  = regexp.MustCompile(`^COPY --from=build (--chown=65532:65532 )?/out/(\S+) (\S+)$`)
	mkdirRe = regexp.MustCompile(`mkdir -p ((?:/out/data\S*\s*)+)`)
)

func readDockerfile(t *testing.T) imageSpec {
	t.Helper()
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec := imageSpec{env: map[string]string{}, copies: map[string]string{}, chowned: map[string]bool{}}
	sc := bufio.NewScanner(f)
	inHealth := false
	for sc.Scan() {
		line := sc.Text()
		if m := fromRe.FindStringSubmatch(line); m != nil {
			spec.froms = append(spec.froms, m[1])
		}
		if m := setRe.FindStringSubmatch(line); m != nil {
			spec.sets = append(spec.sets, [2]string{m[1], m[2]})
		}
		if m := envRe.FindStringSubmatch(line); m != nil {
			spec.env[m[1]] = m[2]
		}
		if m := copyRe.FindStringSubmatch(line); m != nil {
			spec.copies[m[3]] = m[2]
			spec.chowned[m[3]] = m[1] != ""
		}
		if m := mkdirRe.FindStringSubmatch(line); m != nil {
			for _, p := range strings.Fields(m[1]) {
				spec.dataDirs = append(spec.dataDirs, strings.TrimPrefix(p, "/out"))
			}
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

// Issues 14 and 28: the image's layout, rebuilt under a temp root from the
// Dockerfile itself, and the CLI run there as uid 65532 the way `docker
// exec <c> switchboard …` runs it (no flags). The image ships its default
// config read-only (root's) under /usr/share/switchboard; the first start
// writes it to /data/config.yaml in the volume, the daemon's user's, where
// `config set` and the console's config and persona editors can change it;
// a second start keeps those changes.
func TestImageLayoutWithoutDocker(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skipf("not root (uid %d): this test needs root to build the image's layout with root-owned files and run the daemon as the image's uid 65532", os.Getuid())
	}
	spec := readDockerfile(t)
	seed := spec.env["SWITCHBOARD_CONFIG_SEED"]
	if spec.env["SWITCHBOARD_CONFIG"] != "/data/config.yaml" || seed == "" || spec.copies[seed] != "config.yaml" || spec.chowned[seed] ||
		len(spec.cmd) == 0 || len(spec.healthcheck) < 2 || spec.healthcheck[1] != "healthcheck" ||
		!spec.chowned["/data"] || spec.copies["/data"] != "data" || spec.user != "65532:65532" {
		t.Fatalf("the Dockerfile lacks what the image needs: %+v", spec)
	}
	for dest := range spec.copies {
		if strings.HasPrefix(dest, "/etc/switchboard") {
			t.Fatalf("the image still puts %s in /etc/switchboard, where its user cannot edit it", dest)
		}
	}
	for _, want := range []string{"/data/personas", "/data/skills"} {
		if !slices.Contains(spec.dataDirs, want) {
			t.Fatalf("the image does not create %s owned by its user (a named volume mounted there starts as root's): %v", want, spec.dataDirs)
		}
	}
	sets := map[string]string{}
	for _, kv := range spec.sets {
		sets[kv[0]] = kv[1]
	}
	for key, want := range map[string]string{"bot.data_dir": "/data", "personas.dir": "/data/personas", "skills.dir": "/data/skills"} {
		if sets[key] != want {
			t.Fatalf("the image's config sets %s to %q, want %q (inside the volume)", key, sets[key], want)
		}
	}
	if data, err := os.ReadFile("../../.dockerignore"); err != nil || !strings.Contains(string(data), ".git") ||
		!strings.Contains(string(data), "**/data/") {
		t.Fatalf(".dockerignore must exclude .git and local data/: %v\n%s", err, data)
	}

	root := t.TempDir()
	in := func(p string) string { return filepath.Join(root, p) }
	// The image's default config: the shipped config.yaml edited by the
	// Dockerfile's own `config set` lines, with image paths under root and a
	// free port.
	seedPath := in(seed)
	shipped, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(seedPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seedPath, shipped, 0o644); err != nil {
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
		if r := runBin(t, hermeticEnv(t), "-c", seedPath, "config", "set", kv[0], val); r.code != 0 {
			t.Fatalf("config set %s: %d %s", kv[0], r.code, r.stderr)
		}
	}
	if err := os.Chmod(seedPath, 0o644); err != nil {
		t.Fatal(err)
	}
	seedText, err := os.ReadFile(seedPath)
	if err != nil {
		t.Fatal(err)
	}
	bin := in("/usr/local/bin/switchboard")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if raw, err := os.ReadFile(binPath); err != nil || os.WriteFile(bin, raw, 0o755) != nil {
		t.Fatalf("copy the binary: %v", err)
	}
	// Everything root's and 0755 but the volume's tree, which is the image
	// user's (COPY --chown).
	for _, p := range []string{filepath.Dir(root), root, in("/usr"), in("/usr/share"), filepath.Dir(seedPath), in("/usr/local"), in("/usr/local/bin")} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dataDir := in("/data")
	for _, p := range append([]string{"/data"}, spec.dataDirs...) {
		if err := os.MkdirAll(in(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(in(p), 65532, 65532); err != nil {
			t.Fatal(err)
		}
	}
	cred := &syscall.Credential{Uid: 65532, Gid: 65532}
	cfgPath := in(spec.env["SWITCHBOARD_CONFIG"])
	// What deploy/compose.yaml passes: the console's token.
	const adminToken = "compose-admin-token-4f1c9a7e2b"
	env := hermeticEnv(t, "SWITCHBOARD_CONFIG="+cfgPath, "SWITCHBOARD_CONFIG_SEED="+seedPath, "SWITCHBOARD_ADMIN_TOKEN="+adminToken)
	exec1 := func(args ...string) result { // docker exec <c> switchboard ARGS (WORKDIR /data)
		t.Helper()
		return runAs(t, bin, cred, dataDir, env, args...)
	}
	start := func() (stop func(), logs *syncBuffer) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		d := exec.CommandContext(ctx, bin, spec.cmd...)
		d.Env, d.Dir = env, dataDir
		d.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		logs = &syncBuffer{}
		d.Stderr = logs
		if err := d.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		stopped := false
		stop = func() {
			t.Helper()
			if stopped {
				return
			}
			stopped = true
			defer cancel()
			_ = d.Process.Signal(syscall.SIGTERM)
			if err := d.Wait(); err != nil {
				t.Errorf("the daemon did not stop cleanly: %v\n%s", err, logs.String())
			}
		}
		t.Cleanup(stop)
		waitFor(t, func() bool { return exec1(spec.healthcheck[1:]...).code == 0 }, logs)
		return stop, logs
	}

	// First start: the default config is written into the volume, the
	// daemon's user's, from the image's copy.
	stop, logs := start()
	got, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatalf("the first start did not write %s: %v\n%s", cfgPath, err, logs)
	}
	if !bytes.Equal(got, seedText) {
		t.Fatalf("%s differs from the image's default config %s", cfgPath, seedPath)
	}
	if st, err := os.Stat(cfgPath); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65532 || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: want the daemon user's, mode 0600: %v %v", cfgPath, st, err)
	}
	if !strings.Contains(logs.String(), "first start: wrote the default config") {
		t.Errorf("the first start does not say it wrote the config:\n%s", logs)
	}

	r := exec1("pairing", "list")
	expect(t, r, 0, firstLine(r.stdout), "no pending pairing codes")
	expect(t, r, 0, firstLine(r.stderr), "using config "+cfgPath+" (named by SWITCHBOARD_CONFIG)")
	r = exec1("status")
	expect(t, r, 0, firstLine(r.stdout), "Switchboard status")
	r = exec1("personas", "list")
	expect(t, r, 0, r.stdout, "assistant")
	r = exec1("config", "get", "skills.dir")
	expect(t, r, 0, r.stdout, in("/data/skills"))

	// The operator edits the config from the CLI, as the daemon's user.
	r = exec1("config", "set", "bot.name", "Dockerbot")
	if r.code != 0 {
		t.Fatalf("config set in the image: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = exec1("config", "get", "bot.name")
	expect(t, r, 0, r.stdout, "Dockerbot")

	// ... and from the console, logged in with the token compose passes.
	c := loginConsole(t, "http://127.0.0.1:"+port, adminToken)
	a := c.submit("/ui/config", "/ui/config/key", url.Values{"key": {"heartbeat.max_per_day"}, "value": {"5"}, "action": {"apply"}})
	if a.code != http.StatusSeeOther {
		t.Fatalf("the console's config editor: %d\n%s", a.code, a.body)
	}
	const mark = "Sign off with: edited in the container."
	a = c.savePersona("assistant", func(text string) string { return strings.TrimRight(text, "\n") + "\n\n" + mark + "\n" })
	if a.code != http.StatusSeeOther {
		t.Fatalf("the console's persona editor: %d\n%s", a.code, a.body)
	}
	edited, err := os.ReadFile(cfgPath)
	if err != nil || !strings.Contains(string(edited), "Dockerbot") || !strings.Contains(string(edited), "max_per_day: 5") {
		t.Fatalf("the edits are not in %s (err %v):\n%s", cfgPath, err, edited)
	}
	personaFile := filepath.Join(dataDir, "personas", "assistant.md")
	if p, err := os.ReadFile(personaFile); err != nil || !strings.Contains(string(p), mark) {
		t.Fatalf("the console's persona edit is not in %s: %v", personaFile, err)
	}
	info, err := os.Stat(filepath.Join(dataDir, "admin.token"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("admin.token: %v %v", info, err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "switchboard.db")); err != nil {
		t.Fatalf("the daemon did not write its database: %v", err)
	}
	stop()

	// Second start: nothing is written over the operator's edits.
	stop, logs = start()
	if again, err := os.ReadFile(cfgPath); err != nil || !bytes.Equal(again, edited) {
		t.Fatalf("the second start changed %s (err %v):\n%s", cfgPath, err, again)
	}
	if strings.Contains(logs.String(), "wrote the default") {
		t.Errorf("the second start wrote defaults again:\n%s", logs)
	}
	if p, err := os.ReadFile(personaFile); err != nil || !strings.Contains(string(p), mark) {
		t.Fatalf("the second start overwrote %s: %v", personaFile, err)
	}
	r = exec1("config", "get", "bot.name")
	expect(t, r, 0, r.stdout, "Dockerbot")
	stop()

	if now, err := os.ReadFile(seedPath); err != nil || !bytes.Equal(now, seedText) {
		t.Fatalf("the image's default config changed: %v", err)
	}
	for _, p := range []string{filepath.Join(filepath.Dir(seedPath), "data"), in("/etc/switchboard")} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s appeared outside the volume", p)
		}
	}
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

// TestDockerImage builds the image and runs `pairing list`, `status` and
// `config set` in it with docker exec. There is no Docker engine on the CI machines, so it
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
		{"config set bot.name Dockerbot", "bot.name"}, // the config in the volume is the daemon user's
		{"config get bot.name", "Dockerbot"},
	} {
		out, err := docker(append([]string{"exec", id, "switchboard"}, strings.Fields(tt.args)...)...)
		if err != nil || !strings.Contains(out, tt.want) {
			t.Fatalf("docker exec switchboard %s: %v\n%s", tt.args, err, out)
		}
	}
}
