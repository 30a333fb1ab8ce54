package discord

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

func TestResumeAfterDropDeliversGapOnce(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	m1 := h.fake.UserSays(dmID, userID, "before", fakediscord.SayOptions{})
	h.sink.wait(t, 1)

	h.fake.DropConnection()
	m2 := h.fake.UserSays(dmID, userID, "during gap 1", fakediscord.SayOptions{})
	m3 := h.fake.UserSays(dmID, userID, "during gap 2", fakediscord.SayOptions{})

	rs := h.fake.WaitResumes(t, 1, wait)
	if !rs[0].Accepted || rs[0].Seq == 0 {
		t.Fatalf("RESUME = %+v; want an accepted resume with the last sequence", rs[0])
	}
	h.sink.wait(t, 3)
	// After RESUMED the adapter also asks history for anything after the
	// last id it delivered; wait for that fetch, then check nothing doubled.
	h.fake.WaitFor(t, wait, "history fetch after m3", func() bool {
		return slices.ContainsFunc(h.fake.Requests(), func(r fakediscord.Request) bool {
			return r.Method == "GET" && r.Path == "/api/v9/channels/"+dmID+"/messages" && strings.Contains(r.Query, "after="+m3.ID)
		})
	})
	m4 := h.fake.UserSays(dmID, userID, "after", fakediscord.SayOptions{})
	got := h.sink.wait(t, 4)
	if want := []string{m1.ID, m2.ID, m3.ID, m4.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("delivered %v, want each exactly once in order %v\n%s", ids(got), want, fmtMsgs(got))
	}
	if n := len(h.fake.Identifies()); n != 1 {
		t.Errorf("IDENTIFY sent %d times; a resume needs only the first", n)
	}
	if !h.ch.Ready() {
		t.Errorf("not Ready after RESUMED")
	}
}

func TestExpiredSessionReidentifiesAndFetchesHistory(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	m1 := h.fake.UserSays(chanID, userID, "one", fakediscord.SayOptions{GuildID: guildID})
	h.sink.wait(t, 1)

	h.fake.ExpireSession()
	h.fake.DropConnection()
	// Not dispatched (no valid session): only history has them.
	m2 := h.fake.UserSays(chanID, userID, "two", fakediscord.SayOptions{GuildID: guildID})
	m3 := h.fake.UserSays(chanID, userID, "three <@"+h.fake.BotID()+">", fakediscord.SayOptions{GuildID: guildID})

	rs := h.fake.WaitResumes(t, 1, wait)
	if rs[0].Accepted {
		t.Fatalf("expired session was resumed")
	}
	h.fake.WaitIdentifies(t, 2, wait)
	got := h.sink.wait(t, 3)
	if want := []string{m1.ID, m2.ID, m3.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("delivered %v, want %v", ids(got), want)
	}
	if !got[2].Mentioned || got[2].Text != "three" || got[2].Direct || got[2].ChatID != chanID {
		t.Errorf("history message normalized differently from a live one: %+v", got[2])
	}
	m4 := h.fake.UserSays(chanID, userID, "four", fakediscord.SayOptions{GuildID: guildID})
	if got := h.sink.wait(t, 4); got[3].MessageID != m4.ID || len(got) != 4 {
		t.Fatalf("after re-identify: %v", ids(got))
	}
}

func TestHeartbeatACKsStopReconnects(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{HeartbeatInterval: 30 * time.Millisecond}, nil)
	h.fake.SetHeartbeatACK(false)
	// discordgo gives up after ~5 intervals without ACK, closes, and Run
	// reopens with RESUME (the fake drops sessions closed with 1000, so the
	// resume is refused and a fresh IDENTIFY follows).
	h.fake.WaitResumes(t, 1, wait)
	h.fake.SetHeartbeatACK(true)
	h.fake.WaitIdentifies(t, 2, wait)
	if !slices.Contains(h.fake.ClientCloseCodes(), 1000) {
		t.Errorf("client close codes = %v; want the 1000 close discordgo sends", h.fake.ClientCloseCodes())
	}
	waitReady(t, h)
	in := h.fake.UserSays(dmID, userID, "still there?", fakediscord.SayOptions{})
	if got := h.sink.wait(t, 1); got[0].MessageID != in.ID {
		t.Fatalf("got %v", ids(got))
	}
}

func TestDeafConnectionEndsRun(t *testing.T) {
	t.Parallel()
	h := startNoWait(t, fakediscord.Options{HeartbeatInterval: time.Minute}, func(o *Options) {
		o.WatchdogTimeout = 300 * time.Millisecond
	}, func(f *fakediscord.Server) { f.SetHeartbeatACK(false) })
	err := h.runErr(t)
	if err == nil || !strings.Contains(err.Error(), "deaf") {
		t.Fatalf("Run returned %v; want the deaf-connection error", err)
	}
	if h.ch.Ready() {
		t.Errorf("Ready() true after Run returned")
	}
}

func TestMessageContentIntentRefused(t *testing.T) {
	t.Parallel()
	h := startNoWait(t, fakediscord.Options{}, nil, func(f *fakediscord.Server) { f.RefuseMessageContent(true) })
	err := h.runErr(t)
	if err == nil {
		t.Fatal("Run returned nil")
	}
	if !errors.Is(err, ErrMessageContentRefused) || err.Error() != ErrMessageContentRefused.Error() {
		t.Fatalf("Run error = %q", err)
	}
	if !strings.Contains(err.Error(), "Privileged Gateway Intents") {
		t.Errorf("error does not say where to fix it: %v", err)
	}
	if n := strings.Count(h.logs.String(), "refused the MESSAGE CONTENT intent"); n != 1 {
		t.Errorf("log has %d lines about 4014, want exactly 1:\n%s", n, h.logs.String())
	}
	if n := len(h.fake.Identifies()); n != 1 {
		t.Errorf("IDENTIFY attempts = %d; a 4014 must not be retried", n)
	}
}

// The refusal can also come later: the session expires, discordgo's RESUME
// is answered with INVALID_SESSION and its re-IDENTIFY (sent from its own
// goroutine) is closed with 4014. Run must still end with the clear error.
func TestMessageContentIntentRefusedOnReidentify(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	h.fake.RefuseMessageContent(true)
	h.fake.ExpireSession()
	h.fake.DropConnection()
	err := h.runErr(t)
	if !errors.Is(err, ErrMessageContentRefused) {
		t.Fatalf("Run error = %v; want ErrMessageContentRefused", err)
	}
	if n := strings.Count(h.logs.String(), "refused the MESSAGE CONTENT intent"); n != 1 {
		t.Errorf("log has %d lines about 4014, want exactly 1:\n%s", n, h.logs.String())
	}
	if rs := h.fake.Resumes(); len(rs) == 0 || rs[0].Accepted {
		t.Errorf("resumes = %+v; want one refused RESUME first", rs)
	}
}

func TestSinkFailureIsCaughtUpFromHistory(t *testing.T) {
	t.Parallel()
	h := startNoWait(t, fakediscord.Options{}, nil, func(*fakediscord.Server) {})
	h.sink.mu.Lock()
	h.sink.failOn[1] = errors.New("inbox write failed")
	h.sink.mu.Unlock()
	waitReady(t, h)
	m1 := h.fake.UserSays(chanID, userID, "first", fakediscord.SayOptions{GuildID: guildID})
	// m1 is not accepted; the adapter retries it from history on its own.
	h.sink.wait(t, 1)
	m2 := h.fake.UserSays(chanID, userID, "second", fakediscord.SayOptions{GuildID: guildID})
	got := h.sink.wait(t, 2)
	if want := []string{m1.ID, m2.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("delivered %v, want %v", ids(got), want)
	}
}

func TestGatewayURLOverride(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
	ch, _ := newChannel(t, fake, func(o *Options) {
		o.GatewayURL = fake.GatewayURL()
	})
	sink := newSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, sink) }()
	defer func() { cancel(); <-done }()
	fake.WaitFor(t, wait, "ready", ch.Ready)
	for _, r := range fake.Requests() {
		if strings.HasSuffix(r.Path, "/gateway") || strings.HasSuffix(r.Path, "/gateway/bot") {
			t.Errorf("gateway discovery hit the API (%s) although gateway_url was set", r.Path)
		}
	}
}

func TestReconnectAndInvalidSessionOpcodes(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	if !h.fake.Identifies()[0].Compress {
		t.Errorf("discordgo asked for compress=false; the fake's zlib path is untested")
	}
	m1 := h.fake.UserSays(dmID, userID, "one", fakediscord.SayOptions{})
	h.sink.wait(t, 1)

	// op 7: discordgo closes with 1012 (session kept) and Run resumes.
	h.fake.SendReconnect()
	if rs := h.fake.WaitResumes(t, 1, wait); !rs[0].Accepted {
		t.Fatalf("RESUME after op 7 refused: %+v", rs[0])
	}
	m2 := h.fake.UserSays(dmID, userID, "two", fakediscord.SayOptions{})
	h.sink.wait(t, 2)

	// op 9 (not resumable) on a live connection: discordgo re-IDENTIFYs on
	// the same socket; READY follows and delivery continues.
	h.fake.InvalidateSession(false)
	h.fake.WaitIdentifies(t, 2, wait)
	h.fake.WaitOnline(t, wait)
	m3 := h.fake.UserSays(dmID, userID, "three", fakediscord.SayOptions{})
	got := h.sink.wait(t, 3)
	if want := []string{m1.ID, m2.ID, m3.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("delivered %v, want %v", ids(got), want)
	}
	if !slices.Contains(h.fake.ClientCloseCodes(), 1012) {
		t.Errorf("close codes %v; want 1012 after op 7", h.fake.ClientCloseCodes())
	}
}

// A sharded adapter identifies as its shard (Discord then routes it that
// shard's guilds); an unsharded one sends no shard field.
func TestShardIdentifiesAsItsShard(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		id, count int
		want      string // the IDENTIFY "shard" field, "" = absent
	}{
		{"unsharded", 0, 1, ""},
		{"second of two", 1, 2, "[1,2]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, fakediscord.Options{}, func(o *Options) { o.ShardID, o.ShardCount = tc.id, tc.count })
			ids := h.fake.Identifies()
			if len(ids) != 1 {
				t.Fatalf("%d IDENTIFYs", len(ids))
			}
			var d struct {
				Shard json.RawMessage `json:"shard"`
			}
			if err := json.Unmarshal(ids[0].Raw, &d); err != nil {
				t.Fatal(err)
			}
			if got := string(d.Shard); got != tc.want {
				t.Fatalf("IDENTIFY shard = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestShardOutOfRangeRefused(t *testing.T) {
	if _, err := New(Options{Token: "x", ShardID: 2, ShardCount: 2}); err == nil || !strings.Contains(err.Error(), "shard 2") {
		t.Fatalf("New with shard 2 of 2: %v", err)
	}
}
