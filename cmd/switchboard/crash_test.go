package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
)

// faultingRead reads a page of a file mapped into memory after the file was
// truncated under the mapping: the read faults (SIGBUS), as bolt's reads of
// a damaged file do, which the runtime reports as "fatal error: fault" with
// a goroutine trace unless faults are turned into panics.
func faultingRead(t *testing.T) func() {
	return func() {
		path := filepath.Join(t.TempDir(), "mapped")
		ps := os.Getpagesize()
		if err := os.WriteFile(path, make([]byte, ps), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := syscall.Mmap(int(f.Fd()), 0, ps, syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Munmap(b) }()
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		t.Logf("read %d", b[ps/2])
	}
}

// Issue 27 break 4: no CLI command shows an operator a Go crash. A panic
// (or a memory fault) in a command becomes one line on stderr and exit 1,
// the panic's text cleaned of secrets and terminal controls;
// SWITCHBOARD_TRACEBACK=1 lets it crash as Go does, for developers.
func TestPanicInCommandIsOneLine(t *testing.T) {
	cases := []struct {
		name string
		fn   func()
		want string
	}{
		{"panic with a text", func() { panic("boom\nsecond line") }, "boom second line"},
		{"runtime error", func() {
			var s []string
			_ = s[len(os.Args)]
		}, "index out of range"},
		{"nil pointer", func() {
			var a *app
			_ = a.stdout
		}, "nil pointer dereference"},
		{"memory fault", faultingRead(t), "runtime error"},
		{"secret and escape in the text", func() { panic("dial postgres://u:pw-do-not-show@db/x: \x1b]52;c;aGk=\x07") }, "postgres://u:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, env: func(string) string { return "" }}
			root := a.rootCmd()
			root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error { c.fn(); return nil }})
			code := a.execute(context.Background(), root, []string{"boom"})
			out := stderr.String()
			t.Log(out)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "switchboard: ") {
				t.Errorf("stderr is not one line:\n%s", out)
			}
			for _, want := range []string{c.want, "SWITCHBOARD_TRACEBACK=1"} {
				if !strings.Contains(out, want) {
					t.Errorf("stderr lacks %q: %s", want, out)
				}
			}
			for _, bad := range []string{"goroutine ", "pw-do-not-show", "\x1b", "\x07"} {
				if strings.Contains(out, bad) {
					t.Errorf("stderr shows %q: %q", bad, out)
				}
			}
		})
	}

	t.Run("SWITCHBOARD_TRACEBACK=1", func(t *testing.T) {
		var stderr bytes.Buffer
		env := func(k string) string {
			if k == "SWITCHBOARD_TRACEBACK" {
				return "1"
			}
			return ""
		}
		a := &app{stdin: strings.NewReader(""), stdout: &stderr, stderr: &stderr, env: env}
		root := a.rootCmd()
		root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error { panic("boom") }})
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("the panic did not reach the runtime (recovered %v); stderr %q", r, stderr.String())
			}
		}()
		a.execute(context.Background(), root, []string{"boom"})
		t.Error("execute returned")
	})
}
