package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
	"github.com/switchboard-bot/switchboard/memory/storetest"
)

// Resetting a session that does not exist is the operator's mistake (a typo
// in the key): it is refused as a bad request, nothing is archived and no
// audit record claims a reset. A real reset archives and is audited.
func TestResetSessionRefusesUnknownKeyAndAuditsReal(t *testing.T) {
	ctx := context.Background()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), storetest.TestOptions(storetest.NewClock()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.AppendTurn(ctx, "telegram:1", storetest.SimpleTurn(1)); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	for _, key := range []string{"", "telegram:2"} {
		err := ResetSession(ctx, st, key, "cli", now)
		if !errors.Is(err, ErrBadRequest) {
			t.Fatalf("reset %q: err = %v, want a bad request", key, err)
		}
	}
	if err := ResetSession(ctx, st, "telegram:1", "cli", now); err != nil {
		t.Fatal(err)
	}
	arch, err := st.ArchivedSessions(ctx, "telegram:1")
	if err != nil || len(arch) != 1 {
		t.Fatalf("archives = %v, %v; want one", arch, err)
	}
	recs, err := st.ListAudit(ctx, memory.AuditFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var resets []string
	for _, r := range recs {
		if r.Action == "session.reset" {
			resets = append(resets, r.Actor+" "+r.Session)
		}
	}
	if strings.Join(resets, ",") != "cli telegram:1" {
		t.Fatalf("reset audit records = %q, want exactly the real reset", resets)
	}
}
