package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 28 item 1: `config set` with the daemon running builds the edit
// without loading it in the CLI's environment (EditText), writes what the
// daemon accepted (WriteVerified), and finds the daemon in a file that does
// not load (ParseLenient).
func TestEditTextDoesNotLoadOrWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	orig := "# keep me\nchannels:\n  telegram:\n    enabled: false\n    token: ${SB_NO_SUCH_TOKEN}\n"
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	before, after, err := EditText(path, "channels.telegram.enabled", "true", false)
	if err != nil {
		t.Fatalf("EditText: %v (the token is the daemon's business)", err)
	}
	if string(before) != orig || !strings.Contains(string(after), "enabled: true") || !strings.Contains(string(after), "# keep me") {
		t.Fatalf("before %q after %q", before, after)
	}
	if got, _ := os.ReadFile(path); string(got) != orig {
		t.Fatal("EditText wrote the file")
	}
	if _, after2, err := EditText(path, "channels.telegram.enabled", "false", false); err != nil || string(after2) != orig {
		t.Fatalf("an edit that changes nothing: %q, %v", after2, err)
	}
	if _, _, err := EditText(path, "channels.telegram.enabld", "true", false); err == nil {
		t.Fatal("an unknown key was accepted")
	}
	if _, after3, err := EditText(path, "channels.telegram.token", "", true); err != nil || strings.Contains(string(after3), "token") {
		t.Fatalf("unset: %q, %v", after3, err)
	}

	// Written only while the file is what the edit started from.
	if err := WriteVerified(path, []byte("bot:\n  name: Other\n"), []byte("something else")); err == nil || !strings.Contains(err.Error(), "changed since it was read") {
		t.Fatalf("WriteVerified over a changed file: %v", err)
	}
	if err := WriteVerified(path, after, before); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(after) {
		t.Fatalf("written: %q", got)
	}
	cfg, err := Parse(path, after, func(k string) (string, bool) {
		if k == "SB_NO_SUCH_TOKEN" {
			return "1:x", true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Digest() != DigestOf(after) || cfg.Digest() == DigestOf(before) {
		t.Fatalf("digest %q", cfg.Digest())
	}
}

func TestParseLenientFindsTheDaemon(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "SB_ADMIN" {
			return "admin-secret", true
		}
		return "", false
	}
	for _, tt := range []struct {
		name, body, listen, token, dataDir string
	}{
		{"unknown key", "bot:\n  nmae: x\n  data_dir: ./d\nserver:\n  listen: 127.0.0.1:9999\n  admin_token: ${SB_ADMIN}\n", "127.0.0.1:9999", "admin-secret", "./d"},
		{"required token missing", "channels:\n  telegram:\n    enabled: true\nserver:\n  listen: 127.0.0.1:9998\n", "127.0.0.1:9998", "", "./data"},
		{"wrong type elsewhere", "agent:\n  max_iterations: lots\nserver:\n  listen: 127.0.0.1:9997\n", "127.0.0.1:9997", "", "./data"},
		{"syntax error below", "server:\n  listen: 127.0.0.1:9996\njobs: [\n", "127.0.0.1:9996", "", "./data"},
		{"syntax error on line 1", "[\nserver:\n  listen: 127.0.0.1:9995\n", "127.0.0.1:9995", "", "./data"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse("c.yaml", []byte(tt.body), env); err == nil {
				t.Fatal("the case is meant to be invalid")
			}
			cfg := ParseLenient("c.yaml", []byte(tt.body), env)
			if cfg.Server.Listen != tt.listen || cfg.Server.AdminToken.Value() != tt.token || cfg.Bot.DataDir != tt.dataDir {
				t.Fatalf("listen %q token set %v data_dir %q", cfg.Server.Listen, cfg.Server.AdminToken.IsSet(), cfg.Bot.DataDir)
			}
		})
	}
}

func TestSyntaxErrorLines(t *testing.T) {
	filler := strings.Repeat("# c\n", 21)
	for _, tt := range []struct {
		name, body string
		line, col  int
		want       string
	}{
		{"unclosed [", "bot:\n  name: B\n" + filler + "agent:\n  tools: [a, b\nllm:\n  model: x\n", 25, 10, "the list opened with [ here is not closed"},
		{"unclosed { first line", "{a: 1\n", 1, 1, "the mapping opened with { here is not closed"},
		{"nested, inner closed", "agent:\n  tools: [a, [b], c\n", 2, 10, "the list opened with ["},
		{"quoted bracket", "agent:\n  tools: [\"a]\", b\n", 2, 10, "the list opened with ["},
		{"bad indentation", "bot:\n  name: B\n  data_dir: d\n x: 1\n", 4, 0, "did not find expected key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tt.body), noEnv)
			var e *Error
			if !errors.As(err, &e) || e.Line != tt.line || e.Col != tt.col || !strings.Contains(e.Msg, tt.want) {
				t.Fatalf("got %v, want c.yaml:%d:%d %q", err, tt.line, tt.col, tt.want)
			}
		})
	}
}
