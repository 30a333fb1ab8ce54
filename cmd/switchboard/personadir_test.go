package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 28 item 4: with the shipped config.yaml, run from a checkout, the
// console's persona editor saves into the editable personas directory the
// config names, never into the personas package whose *.md files are the
// embedded built-ins (that dirtied git). The checkout is mimicked in a temp
// dir: the repository's config.yaml and a copy of its personas/ package.
func TestConsolePersonaEditLeavesSourceTree(t *testing.T) {
	repo := t.TempDir()
	shipped, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(repo, "config.yaml")
	if err := os.WriteFile(cfgPath, shipped, 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(repo, "personas")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	files, err := filepath.Glob("../../personas/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if info, err := os.Stat(f); err != nil || !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		before[filepath.Base(f)] = data
		if err := os.WriteFile(filepath.Join(src, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := before["assistant.md"]; !ok {
		t.Fatalf("the repository's personas/ has no assistant.md: %v", files)
	}

	addr := freePort(t)
	env := hermeticEnv(t)
	for _, kv := range [][2]string{{"server.listen", addr}, {"channels.console.enabled", "false"}} {
		if r := runIn(t, repo, env, "config", "set", kv[0], kv[1]); r.code != 0 {
			t.Fatalf("config set %s: %d %s", kv[0], r.code, r.stderr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := exec.CommandContext(ctx, binPath, "run") // from the checkout's root, as the README says
	d.Env, d.Dir = env, repo
	logs := &syncBuffer{}
	d.Stdout, d.Stderr = logs, logs
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = d.Process.Signal(syscall.SIGTERM)
		_ = d.Wait()
	}()
	tokenFile := filepath.Join(repo, "data", "admin.token")
	waitFor(t, func() bool {
		res, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		_, terr := os.Stat(tokenFile)
		return res.StatusCode == http.StatusOK && terr == nil
	}, logs)
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	c := loginConsole(t, "http://"+addr, strings.TrimSpace(string(token)))

	const mark = "Always sign off with: edited in the console."
	a := c.savePersona("assistant", func(text string) string { return strings.TrimRight(text, "\n") + "\n\n" + mark + "\n" })
	if a.code != http.StatusSeeOther {
		t.Fatalf("saving the persona: %d\n%s", a.code, a.body)
	}
	for name, data := range before {
		now, err := os.ReadFile(filepath.Join(src, name))
		if err != nil || !bytes.Equal(now, data) {
			t.Errorf("the console's save changed the source file personas/%s (err %v)", name, err)
		}
	}
	if extra, _ := filepath.Glob(filepath.Join(src, "*.md")); len(extra) != 3 {
		t.Errorf("personas/ holds %v after the save; want only the three built-ins", extra)
	}
	saved, err := os.ReadFile(filepath.Join(repo, "data", "personas", "assistant.md"))
	if err != nil || !bytes.Contains(saved, []byte(mark)) {
		t.Fatalf("the edit is not in data/personas/assistant.md (err %v):\n%s", err, saved)
	}
	// The console shows where it saved, and the running daemon uses the edit.
	page := c.get(a.location)
	if !regexp.MustCompile(`id="flash">Saved [^<]*data/personas/assistant\.md`).MatchString(page.body) {
		t.Errorf("the console does not say where it saved:\n%s", page.body)
	}
	r := runIn(t, repo, env, "personas", "show", "assistant")
	if r.code != 0 || !strings.Contains(r.stdout, mark) {
		t.Errorf("personas show assistant: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
