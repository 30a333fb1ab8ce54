package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// Issue 3: with the daemon stopped, `pairing list` shows a pending code and
// `pairing approve` approves it in the store (and the approval is audited).
func TestPairingApproveWithDaemonStopped(t *testing.T) {
	cfg := writeConfig(t, "bot:\n  data_dir: ./data\npersonas:\n  dir: ./personas\n")
	db := filepath.Join(filepath.Dir(cfg), "data", "switchboard.db")
	st, err := bolt.Open(db, memory.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req, _, err := hub.NewPairing(st, nil).Request(ctx, channels.Message{Channel: "telegram", ChatID: "42",
		Direct: true, Sender: channels.Sender{ID: "42", Name: "Eve"}})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	r := runBin(t, cleanEnv(), "--config", cfg, "pairing", "list")
	if r.code != 0 || !strings.Contains(r.stdout, req.Code) || !strings.Contains(r.stdout, "telegram:user:42") {
		t.Fatalf("pairing list: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runBin(t, cleanEnv(), "--config", cfg, "pairing", "approve", "WRONG234")
	if r.code != 2 || !strings.Contains(r.stderr, "unknown or expired pairing code") {
		t.Fatalf("approve of a wrong code: exit %d\n%s", r.code, r.stderr)
	}
	r = runBin(t, cleanEnv(), "--config", cfg, "pairing", "approve", strings.ToLower(req.Code))
	if r.code != 0 || !strings.Contains(r.stdout, "approved telegram:user:42 (Eve)") {
		t.Fatalf("pairing approve: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	st, err = bolt.Open(db, memory.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ok, _ := hub.NewPairing(st, nil).IsApproved(ctx, "telegram:user:42"); !ok {
		t.Fatal("the user is not approved in the store")
	}
	recs, _ := st.ListAudit(ctx, memory.AuditFilter{})
	if len(recs) == 0 || recs[0].Action != "pairing.approve" || recs[0].Actor != "cli" {
		t.Fatalf("approval not audited: %+v", recs)
	}
}

// Issue 8: `switchboard jobs run NAME` runs a job now and reports each
// delivery; a reminder is delivered as is (here to the console).
func TestJobsRunNow(t *testing.T) {
	cfg := writeConfig(t, `bot:
  data_dir: ./data
personas:
  dir: ./personas
server:
  listen: ""
jobs:
  - name: stretch
    schedule: "0 15 * * *"
    kind: reminder
    text: Time to stretch!
    deliver_to: ["console:local"]
`)
	r := runBin(t, cleanEnv(), "--config", cfg, "jobs", "run", "stretch")
	if r.code != 0 || !strings.Contains(r.stdout, "Time to stretch!") ||
		!strings.Contains(r.stdout, "ran stretch: ok") || !strings.Contains(r.stdout, "console:local: delivered") {
		t.Fatalf("jobs run: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = runBin(t, cleanEnv(), "--config", cfg, "jobs", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "stretch") || !strings.Contains(r.stdout, "ok") {
		t.Fatalf("jobs list after the run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runBin(t, cleanEnv(), "--config", cfg, "jobs", "run", "nosuchjob")
	if r.code != 2 || !strings.Contains(r.stderr, "no such job") {
		t.Fatalf("jobs run of an unknown job: exit %d\n%s", r.code, r.stderr)
	}
}
