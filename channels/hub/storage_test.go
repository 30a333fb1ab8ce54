package hub_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// Issue 13, defect 2: a store whose writes fail for a while (disk full) must
// not lose messages.

// fullDisk wraps a real store; while full, the writes a turn needs after the
// message was accepted fail like bolt's do on a full disk (a *fs.PathError
// wrapping ENOSPC). clearFails says whether clearing inbox items fails too (on
// a real full disk bolt may still reuse free pages for a small delete).
type fullDisk struct {
	*bolt.Store
	full       atomic.Bool
	clearFails bool
	failed     atomic.Int64
}

func (f *fullDisk) fail() error {
	if !f.full.Load() {
		return nil
	}
	f.failed.Add(1)
	return fmt.Errorf("memory: write: %w", &fs.PathError{Op: "write", Path: "/data/switchboard.db", Err: syscall.ENOSPC})
}

func (f *fullDisk) AppendTurn(ctx context.Context, key string, turn memory.Turn) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Store.AppendTurn(ctx, key, turn)
}

func (f *fullDisk) OutboxIntent(ctx context.Context, r memory.OutboxRecord) (uint64, error) {
	if err := f.fail(); err != nil {
		return 0, err
	}
	return f.Store.OutboxIntent(ctx, r)
}

func (f *fullDisk) OutboxResult(ctx context.Context, id uint64, status, pid, errText string) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Store.OutboxResult(ctx, id, status, pid, errText)
}

// CommitTurn fails like AppendTurn (the turn's commit, issue 19).
func (f *fullDisk) CommitTurn(ctx context.Context, key string, c memory.TurnCommit) ([]uint64, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.Store.CommitTurn(ctx, key, c)
}

// RecordDelivery fails like the writes it combines: receipts, intents and,
// when clearFails, the clearing of inbox items.
func (f *fullDisk) RecordDelivery(ctx context.Context, d memory.DeliveryRecord) ([]uint64, error) {
	if len(d.Receipts) > 0 || len(d.Intents) > 0 || f.clearFails {
		if err := f.fail(); err != nil {
			return nil, err
		}
	}
	return f.Store.RecordDelivery(ctx, d)
}

func (f *fullDisk) KVPut(ctx context.Context, key string, val []byte) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Store.KVPut(ctx, key, val)
}

func (f *fullDisk) InboxDone(ctx context.Context, ids ...uint64) error {
	if f.clearFails {
		if err := f.fail(); err != nil {
			return err
		}
	}
	return f.Store.InboxDone(ctx, ids...)
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// storageObs records the storage events the handler reports.
type storageObs struct {
	mu       sync.Mutex
	failures int
	health   []bool
}

func (o *storageObs) MessageIn(string)                                    {}
func (o *storageObs) MessageDropped(string, string)                       {}
func (o *storageObs) TurnDone(string, agent.Result, error, time.Duration) {}
func (o *storageObs) StorageFailure(string) {
	o.mu.Lock()
	o.failures++
	o.mu.Unlock()
}
func (o *storageObs) StorageHealthy(ok bool) {
	o.mu.Lock()
	o.health = append(o.health, ok)
	o.mu.Unlock()
}

type diskRig struct {
	t     *testing.T
	dir   string
	llm   *fakellm.Server
	disk  *fullDisk
	h     *hub.Handler
	ch    *console.Memory
	logs  *syncBuffer
	obs   *storageObs
	close func()
}

// handlerStore hides the store's AppendTurn from the handler, which then has
// to run a turn whose commit failed again instead of committing its result.
type handlerStore struct{ hub.Store }

func newDiskRig(t *testing.T, llm *fakellm.Server, dir string, clearFails bool, hideCommitter ...bool) *diskRig {
	t.Helper()
	st, err := bolt.Open(filepath.Join(dir, "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	d := &diskRig{t: t, dir: dir, llm: llm, disk: &fullDisk{Store: st, clearFails: clearFails},
		logs: &syncBuffer{}, obs: &storageObs{}}
	ag, err := agent.New(agent.Options{BaseURL: llm.URL, APIKey: "test-key", Model: "fake-model",
		MaxRetries: 1, RetryBase: time.Millisecond, RetryMax: time.Millisecond,
		Timeout: 5 * time.Second, HTTPClient: llm.HTTPClient(), Sessions: d.disk})
	if err != nil {
		t.Fatal(err)
	}
	d.ch = console.NewMemory("memory", 4000, time.Millisecond)
	var hs hub.Store = d.disk
	if len(hideCommitter) > 0 && hideCommitter[0] {
		hs = handlerStore{d.disk}
	}
	d.h = hub.NewHandler(hub.HandlerOptions{
		Store: hs, Agent: ag, Access: openAccess(), Observer: d.obs,
		Outbound:         outbound.New(d.disk, outbound.Options{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}),
		Logger:           slog.New(slog.NewTextHandler(d.logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		StorageRetryBase: time.Millisecond, StorageRetryMax: 5 * time.Millisecond,
	})
	d.h.Register(d.ch)
	d.ch.Attach(d.h)
	var once sync.Once
	d.close = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			d.h.Close(ctx)
			if err := st.Close(); err != nil {
				t.Errorf("close store: %v", err)
			}
		})
	}
	t.Cleanup(d.close)
	return d
}

func (d *diskRig) say(chat, text string) {
	d.t.Helper()
	if err := d.ch.Say(context.Background(), channels.Message{ChatID: chat, Sender: channels.Sender{ID: chat, Name: "U"},
		Text: text, Direct: true}); err != nil {
		d.t.Fatalf("say %q: %v", text, err)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// tenOnFullDisk sends 10 messages (5 chats × 2) while the disk is full and
// waits until every chat's first turn ran into the full disk.
func tenOnFullDisk(t *testing.T, d *diskRig) (chats []string, msgs map[string][]string) {
	t.Helper()
	d.disk.full.Store(true)
	msgs = map[string][]string{}
	for c := range 5 {
		chat := fmt.Sprintf("c%d", c)
		chats = append(chats, chat)
		for m := range 2 {
			text := fmt.Sprintf("msg-%d-%d", c, m)
			msgs[chat] = append(msgs[chat], text)
			d.say(chat, text)
		}
	}
	eventually(t, "every chat's turn to hit the full disk", func() bool {
		return d.llm.RequestCount() >= 5 && d.disk.failed.Load() >= 5 && !d.h.StorageHealth().OK
	})
	return chats, msgs
}

// answeredOnce checks every message is covered by exactly one reply in its chat.
func answeredOnce(t *testing.T, ch *console.Memory, chats []string, msgs map[string][]string) {
	t.Helper()
	for _, chat := range chats {
		for _, text := range msgs[chat] {
			ch.WaitFor(t, "memory:"+chat, wait, "the answer to "+text, func(s []console.Sent) bool {
				for _, m := range s {
					if strings.Contains(m.Text, text) {
						return true
					}
				}
				return false
			})
		}
	}
	for _, chat := range chats {
		sent := texts(ch.Sent("memory:" + chat))
		for _, text := range msgs[chat] {
			n := 0
			for _, s := range sent {
				if strings.Contains(s, text) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s answered %d times in %q", text, n, sent)
			}
		}
	}
}

func inboxLen(t *testing.T, st *bolt.Store) int {
	t.Helper()
	items, err := st.InboxPending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(items)
}

// While the disk is full no message is cleared and nothing is sent; the model
// is not called again and again; the operator gets one ERROR line, the
// observer and StorageHealth report the failure. Once space comes back all 10
// messages are answered exactly once without a restart, the inbox is empty
// and the health recovers.
func TestFullDiskMessagesStayPendingAndAreAnsweredWhenSpaceReturns(t *testing.T) {
	for _, tc := range []struct {
		name       string
		clearFails bool // clearing inbox items fails too
		rerun      bool // the handler cannot commit a turn's result: it runs the turn again
	}{
		{"commit and outbox fail", false, false},
		{"every write fails", true, false},
		{"turn runs again", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			llm := fakellm.Start(t, fakellm.Echo())
			d := newDiskRig(t, llm, t.TempDir(), tc.clearFails, tc.rerun)
			chats, msgs := tenOnFullDisk(t, d)

			calls := llm.RequestCount()
			time.Sleep(30 * time.Millisecond) // many retry periods (1–5ms)
			if n := inboxLen(t, d.disk.Store); n != 10 {
				t.Fatalf("inbox holds %d items while the disk is full, want all 10 pending", n)
			}
			if s := d.ch.Sent(""); len(s) != 0 {
				t.Fatalf("sent %q while the outbox could not be written", texts(s))
			}
			if n := llm.RequestCount(); n != calls {
				t.Fatalf("model called %d more times while the disk was still full", n-calls)
			}
			sh := d.h.StorageHealth()
			if sh.OK || !strings.Contains(sh.Reason, "no space left on device") || sh.Failures < 5 {
				t.Fatalf("storage health while full = %+v", sh)
			}
			logs := d.logs.String()
			if n := strings.Count(logs, "storage writes are failing"); n != 1 || !strings.Contains(logs, "level=ERROR") {
				t.Fatalf("want exactly one ERROR line for the failure episode, got %d:\n%s", n, logs)
			}

			d.disk.full.Store(false)
			answeredOnce(t, d.ch, chats, msgs)
			waitInboxEmpty(t, d.disk.Store)
			if !tc.rerun {
				// The turn's result was committed once space was back: the
				// model saw every message exactly once.
				for _, chat := range chats {
					for _, text := range msgs[chat] {
						n := 0
						for _, req := range llm.Requests() {
							if strings.Contains(req.LastUserText(), text) {
								n++
							}
						}
						if n != 1 {
							t.Errorf("the model saw %s %d times, want once", text, n)
						}
					}
				}
			}
			eventually(t, "storage health to recover", func() bool { return d.h.StorageHealth().OK })
			if !strings.Contains(d.logs.String(), "storage writes work again") {
				t.Errorf("no recovery log line:\n%s", d.logs.String())
			}
			d.obs.mu.Lock()
			defer d.obs.mu.Unlock()
			if d.obs.failures < 5 || len(d.obs.health) != 2 || d.obs.health[0] || !d.obs.health[1] {
				t.Errorf("observer saw failures=%d health=%v; want ≥5 failures and [false true]", d.obs.failures, d.obs.health)
			}
		})
	}
}

// A shutdown while the disk is full does not wait for space: Close returns at
// once and the 10 messages stay in the inbox; the next start (with space
// again) answers every one of them.
func TestFullDiskShutdownThenReplayAnswersAll(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	dir := t.TempDir()
	d := newDiskRig(t, llm, dir, false)
	chats, msgs := tenOnFullDisk(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() { d.h.Close(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Close waited for the disk to have space")
	}
	if n := inboxLen(t, d.disk.Store); n != 10 {
		t.Fatalf("inbox holds %d items after shutdown on a full disk, want 10", n)
	}
	d.close()

	d2 := newDiskRig(t, llm, dir, false)
	if n, err := d2.h.Replay(context.Background()); err != nil || n != 10 {
		t.Fatalf("replay = %d, %v; want 10", n, err)
	}
	answeredOnce(t, d2.ch, chats, msgs)
	waitInboxEmpty(t, d2.disk.Store)
}

// /stop ends the wait of a turn stuck on a full disk: the message is dropped
// (the user asked for it), and the /stop reply arrives once space is back.
func TestFullDiskStopEndsTheRetry(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	d := newDiskRig(t, llm, t.TempDir(), false)
	d.disk.full.Store(true)
	d.say("c1", "long question")
	eventually(t, "the turn to hit the full disk", func() bool { return llm.RequestCount() == 1 && !d.h.StorageHealth().OK })
	d.say("c1", "/stop")
	time.Sleep(20 * time.Millisecond)
	d.disk.full.Store(false)
	d.ch.WaitSent(t, "memory:c1", 1, wait)
	waitInboxEmpty(t, d.disk.Store)
	time.Sleep(20 * time.Millisecond)
	got := d.ch.Sent("memory:c1")
	if len(got) != 1 || strings.Contains(got[0].Text, "long question") {
		t.Fatalf("after /stop sent %q; want only the /stop reply", texts(got))
	}
	if n := llm.RequestCount(); n != 1 {
		t.Fatalf("model called %d times, want 1 (the stopped turn is not run again)", n)
	}
}
