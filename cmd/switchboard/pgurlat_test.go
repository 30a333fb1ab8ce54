package main

import (
	"strings"
	"testing"
)

// A postgres password with an unencoded '@' is refused by validation (the
// driver would print the text after it as the host name): `config
// validate`, `doctor` and `run` say how to write it, and no piece of the
// password is in their output.
func TestBinaryPostgresPasswordWithAt(t *testing.T) {
	cfg := writeConfig(t, "bot:\n  data_dir: ./data\nstorage:\n  backend: postgres\n  postgres:\n    url: ${DBURL}\n")
	env := hermeticEnv(t, "DBURL=postgres://sb:PG@SECRET9@127.0.0.1:1/db?connect_timeout=2", "OPENAI_API_KEY="+e2eKey)
	const want = "storage.postgres.url: the user info holds an unencoded '@': percent-encode '@' in the password as %40"
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"config", "validate"}, 2},
		{[]string{"doctor"}, 1},
		{[]string{"run"}, 2},
	} {
		r := runBin(t, env, append([]string{"--config", cfg}, tt.args...)...)
		out := r.stdout + r.stderr
		if r.code != tt.code || !strings.Contains(out, want) || !strings.Contains(out, "config.yaml:6:") {
			t.Fatalf("%v: exit %d (want %d), want %q at config.yaml:6\nstdout: %s\nstderr: %s", tt.args, r.code, tt.code, want, r.stdout, r.stderr)
		}
		if strings.Contains(out, "SECRET9") || strings.Contains(out, "PG@") {
			t.Fatalf("%v: a piece of the password is in the output:\n%s", tt.args, out)
		}
	}
}
