package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/cluster"
	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
)

// Issue 18: `switchboard cluster status` reads the replicas, the leases and
// the inbox backlog from the database; with bolt it says there is no
// cluster.
func TestClusterStatus(t *testing.T) {
	url := pgtest.Start(t)
	ctx := context.Background()
	r, err := cluster.Open(ctx, url, cluster.Options{ReplicaID: "replica-a", LeaseTTL: time.Minute,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, ok, err := r.TryAcquire(ctx, "telegram-poll"); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	dir := t.TempDir()
	cases := []struct {
		name, yaml string
		code       int
		want       []string
	}{
		{"postgres", "storage:\n  backend: postgres\n  postgres: {url: \"" + url + "\"}\n", 0,
			[]string{"cluster: 1 of 1 replicas alive", "replica replica-a: alive", "lease telegram-poll: replica-a (token 1", "inbox backlog: 0"}},
		{"bolt", "storage: {backend: bolt}\n", 2, []string{"replicas need postgres"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(path, []byte("bot: {data_dir: "+dir+"}\n"+tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI(t, "--config", path, "cluster", "status")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
		})
	}
}
