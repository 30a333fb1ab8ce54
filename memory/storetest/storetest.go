// Package storetest is the conformance suite of memory.Store: Run proves,
// against any implementation, every behaviour the store promises — reopen
// keeps everything, turns with tool calls round-trip, history is cut at turn
// boundaries and sanitized, dedup expires on an injected clock, inbox
// pending/answered/done, outbox intents and receipts, jobs and runs, audit,
// notes, kv, prune, stats and check, export, move, archives and reset, background
// tasks (claims, leases, finish and delivery once), the workspace (bounds,
// all-or-nothing changes, files in the turn's commit, kept by reset, moved
// with the session).
//
// An implementation's tests call Run with a Factory that opens (or reopens)
// the store kept in a directory. What only one backend can show (bolt's file
// lock, a corrupt file, group commit, a writer killed with SIGKILL, which
// re-executes the test binary and so lives beside the backend's own
// TestHelperProcess) stays in that backend's package.
package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// Factory opens the store kept in dir with opts. Called again with the same
// dir after the first store was closed, it must reopen the same data. dir is
// an empty, private directory the suite owns (it need not exist yet).
type Factory func(t testing.TB, dir string, opts memory.Options) (memory.Store, error)

// harness carries the factory into the suite's tests.
type harness struct{ open Factory }

// Run runs the conformance suite against the implementation open returns,
// each behaviour as a subtest named after the test it replaced.
func Run(t *testing.T, open Factory) {
	h := harness{open: open}
	tests := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"ReopenKeepsEverything", h.testReopenKeepsEverything},
		{"StatsAndCheck", h.testStatsAndCheck},
		{"CanceledContext", h.testCanceledContext},
		{"KV", h.testKV},
		{"TurnWithToolCallsRoundTrips", h.testTurnWithToolCallsRoundTrips},
		{"LoadHistoryCutsAtTurnBoundaries", h.testLoadHistoryCutsAtTurnBoundaries},
		{"SanitizeHistory", h.testSanitizeHistory},
		{"CanceledTurnIsStoredButNotReplayedToModel", h.testCanceledTurnIsStoredButNotReplayedToModel},
		{"ConcurrentSessions", h.testConcurrentSessions},
		{"AppendTurnMarksInboxAnswered", h.testAppendTurnMarksInboxAnswered},
		{"ResetArchivesSession", h.testResetArchivesSession},
		{"ExportSessionJSON", h.testExportSessionJSON},
		{"ListSessionsAndPersona", h.testListSessionsAndPersona},
		{"MoveSessionKeepsHistoryNotesAndArchives", h.testMoveSessionKeepsHistoryNotesAndArchives},
		{"AcceptDetectsDuplicates", h.testAcceptDetectsDuplicates},
		{"ConcurrentAcceptOfSameMessageAcceptsOnce", h.testConcurrentAcceptOfSameMessageAcceptsOnce},
		{"DedupRecordsExpire", h.testDedupRecordsExpire},
		{"Outbox", h.testOutbox},
		{"LifecycleThreeWrites", h.testLifecycleThreeWrites},
		{"LifecycleChunksAndAtomicity", h.testLifecycleChunksAndAtomicity},
		{"NotesAreIsolatedPerScope", h.testNotesAreIsolatedPerScope},
		{"ReadTurn", h.testReadTurn},
		{"AuditFilter", h.testAuditFilter},
		{"JobsAndRuns", h.testJobsAndRuns},
		{"Prune", h.testPrune},
		{"UsageBook", h.testUsageBook},
		{"WorkspaceFiles", h.testWorkspaceFiles},
		{"WorkspaceBounds", h.testWorkspaceBounds},
		{"WorkspaceInTurnCommit", h.testWorkspaceInTurnCommit},
		{"TasksLifecycle", h.testTasksLifecycle},
		{"TasksLeaseTakeover", h.testTasksLeaseTakeover},
		{"TasksClaimExclusive", h.testTasksClaimExclusive},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.fn)
	}
}

// Clock is an injected clock tests move by hand.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at 2025-03-01 12:00 UTC.
func NewClock() *Clock {
	return &Clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// Now is the clock's time (memory.Options.Now).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestOptions are fast options: no fsync, short batch delay, injected clock.
func TestOptions(clk *Clock) memory.Options {
	return memory.Options{Now: clk.Now, NoSync: true, BatchDelay: time.Millisecond, Timeout: 200 * time.Millisecond}
}

// openAt opens the store in dir and closes it when the test ends.
func (h harness) openAt(t testing.TB, dir string, opts memory.Options) memory.Store {
	t.Helper()
	s, err := h.open(t, dir, opts)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openTest opens a fresh store with TestOptions; it returns the store, its
// clock and the directory to reopen it from.
func (h harness) openTest(t testing.TB) (memory.Store, *Clock, string) {
	t.Helper()
	clk := NewClock()
	dir := t.TempDir() + "/data"
	return h.openAt(t, dir, TestOptions(clk)), clk, dir
}

func mustNo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
