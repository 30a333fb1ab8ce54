package chaos

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
)

// clusterTTL is cluster.lease_ttl in the cluster chaos test.
const clusterTTL = time.Second

// tickChat is the Telegram chat the every-3s reminder is delivered to (the
// fake knows only chats that wrote to the bot: chat 0's).
var tickChat = loadtest.TelegramChatID(0)

// replicaSet is the fakes plus three daemon replicas on one PostgreSQL
// database, each with its own config (listen address, data dir).
type replicaSet struct {
	t     *testing.T
	r     *rig // the fakes and the conversation driver; r.procs holds every run
	url   string
	cfgs  []string
	addrs []string
	env   []string
	mu    sync.Mutex
	cur   []*loadtest.Proc
}

func newReplicaSet(t *testing.T, n int, m loadtest.ModelOptions) *replicaSet {
	t.Helper()
	url := pgtest.Start(t)
	r := newRig(t, m, loadtest.ConfigOptions{})
	s := &replicaSet{t: t, r: r, url: url, env: append(r.p.Env(), "DATABASE_URL="+url), cur: make([]*loadtest.Proc, n)}
	extra := fmt.Sprintf(`storage:
  backend: postgres
  postgres:
    url: ${DATABASE_URL}
cluster:
  lease_ttl: %s
jobs:
  - name: tick
    kind: reminder
    schedule: "@every 3s"
    text: tick
    deliver_to: ["telegram:%d"]
    misfire: run_once
`, clusterTTL, tickChat)
	for range n {
		dir := t.TempDir()
		addr, err := loadtest.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := r.p.WriteConfig(dir, loadtest.ConfigOptions{DataDir: filepath.Join(dir, "data"), Listen: addr, Extra: extra,
			LogLevel: cmp.Or(os.Getenv("CHAOS_LOG_LEVEL"), "info")})
		if err != nil {
			t.Fatal(err)
		}
		body, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sharded := strings.Replace(string(body), "\n  discord:\n", "\n  discord:\n    shards: 2\n", 1)
		if sharded == string(body) {
			t.Fatal("the generated config has no channels.discord section to shard")
		}
		if err := os.WriteFile(cfg, []byte(sharded), 0o600); err != nil {
			t.Fatal(err)
		}
		s.cfgs, s.addrs = append(s.cfgs, cfg), append(s.addrs, addr)
	}
	t.Cleanup(func() {
		for _, p := range s.procs() {
			if p != nil {
				p.Kill()
			}
		}
	})
	return s
}

func (s *replicaSet) start(i int) {
	s.t.Helper()
	p, err := loadtest.StartProc(s.r.bin, s.cfgs[i], s.addrs[i], s.env)
	if err != nil {
		s.t.Fatal(err)
	}
	s.r.mu.Lock()
	s.r.procs = append(s.r.procs, p)
	s.r.mu.Unlock()
	if _, err := p.WaitReady(context.Background(), 60*time.Second); err != nil {
		s.t.Fatalf("replica %d: %v\n%s", i, err, p.Output())
	}
	s.mu.Lock()
	s.cur[i] = p
	s.mu.Unlock()
}

func (s *replicaSet) procs() []*loadtest.Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cur)
}

// holder is the pid of the replica holding lease name now (0: none).
func (s *replicaSet) holder(ctx context.Context, db *pgx.Conn, name string) int {
	var id string
	err := db.QueryRow(ctx, `SELECT holder FROM cluster_leases WHERE name = $1 AND holder <> '' AND expires > now()`, name).Scan(&id)
	if err != nil {
		return 0
	}
	parts := strings.Split(id, "-")
	if len(parts) < 3 {
		return 0
	}
	pid, _ := strconv.Atoi(parts[len(parts)-2])
	return pid
}

// TestClusterSIGKILLReplicas (issue 18): three replicas on one database,
// Telegram polling, Slack Socket Mode and Discord with two shards on the
// fakes, 100 chats. A random replica is SIGKILLed and restarted 20 times
// while the chats talk. Every message is answered exactly once (resends in
// the one send window counted apart), each chat's answers come in order,
// Telegram is never polled by two replicas at once (the fake answers 409 to
// overlapping pollers), the reminder due every 3 s fires at most once per
// slot across leader changes, and polling is taken over within
// lease_ttl + 2 s of its holder's death (measured and printed).
func TestClusterSIGKILLReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: starts and kills three daemon binaries")
	}
	if raceEnabled {
		// The daemons are plain binaries either way; -race would only slow
		// the fakes in this process and distort the takeover times measured.
		t.Skip("chaos: the replica test measures takeover times; run it without -race")
	}
	const replicas, chats = 3, 100
	kills := 20
	if os.Getenv("CHAOS_KILLS") != "" {
		kills, _ = strconv.Atoi(os.Getenv("CHAOS_KILLS"))
	}
	s := newReplicaSet(t, replicas, loadtest.ModelOptions{})
	for i := range replicas {
		s.start(i)
	}
	began := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	go s.r.p.RedeliverSlack(ctx, 400*time.Millisecond)

	var takeovers []time.Duration
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		rnd := rand.New(rand.NewPCG(7, 18))
		for k := range kills {
			select {
			case <-time.After(time.Duration(500+rnd.IntN(700)) * time.Millisecond):
			case <-ctx.Done():
				return
			}
			victim := rnd.IntN(replicas)
			if k%4 == 0 { // every fourth kill hits the Telegram poller
				pid := s.holder(ctx, db, "telegram-poll")
				for i, p := range s.procs() {
					if p != nil && p.Pid() == pid {
						victim = i
					}
				}
			}
			p := s.procs()[victim]
			wasPoller := s.holder(ctx, db, "telegram-poll") == p.Pid()
			killed := time.Now()
			p.Kill()
			if wasPoller {
				for time.Since(killed) < 4*clusterTTL {
					if h := s.holder(ctx, db, "telegram-poll"); h != 0 && h != p.Pid() {
						takeovers = append(takeovers, time.Since(killed))
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			s.start(victim)
		}
	}()

	// Each chat sends two messages back to back, waits for both answers
	// (or gives up after the wait), and goes on until the kills are over.
	type said struct {
		tok   string
		chat  int
		prev  string // the message sent just before, in the same pair ("" for a pair's first)
		inice bool   // both messages of the pair were answered within the wait
	}
	var mu sync.Mutex
	var sent []said
	var wg sync.WaitGroup
	for c := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ; seq += 2 {
				select {
				case <-killerDone:
					return
				default:
				}
				a, b := loadtest.Token(c, seq), loadtest.Token(c, seq+1)
				cha, chb := s.r.p.Expect(a), s.r.p.Expect(b)
				s.r.p.Say(c, a)
				s.r.p.Say(c, b)
				timeout := time.After(4 * clusterTTL)
				got := 0
				for got < 2 {
					select {
					case <-cha:
						cha, got = nil, got+1
					case <-chb:
						chb, got = nil, got+1
					case <-timeout:
						got = 3
					case <-ctx.Done():
						return
					}
				}
				mu.Lock()
				sent = append(sent, said{tok: a, chat: c}, said{tok: b, chat: c, prev: a, inice: got == 2})
				mu.Unlock()
				time.Sleep(time.Duration(200+c%7*50) * time.Millisecond)
			}
		}()
	}
	<-killerDone
	wg.Wait()
	lost := map[string]bool{}
	deadline := time.Now().Add(10 * clusterTTL)
	var sightings map[string]loadtest.Sighting
	for {
		sightings = s.r.p.Sightings()
		clear(lost)
		for _, m := range sent {
			if _, ok := sightings[m.tok]; !ok && !s.r.onPlatform(m.tok, loadtest.PlatformOf(m.chat)) {
				lost[m.tok] = true
			}
		}
		if len(lost) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	out := s.r.output()
	resends := strings.Count(out, "resending a chunk")
	// Replies the user saw twice; a resent chunk that answered both
	// messages of a pair is one (the CI failure of 17b6817 counted its
	// two tokens: 10 "duplicates" of 6 resends were 5 repeated replies).
	dups := s.r.p.Repeats()
	var firstContact []string
	for tok := range lost {
		if strings.HasSuffix(strings.TrimSuffix(tok, "z"), "x0") && loadtest.PlatformOf(chatOf(tok)) == loadtest.Discord {
			firstContact = append(firstContact, tok) // as in TestKillRestartDuringConversations
			continue
		}
		t.Errorf("message %s (%s) never answered; the replicas' log lines about it or its session:\n%s", tok,
			loadtest.PlatformOf(chatOf(tok)), grepLines(out, tok, sessionKey(chatOf(tok))))
	}
	if len(dups) > resends {
		t.Errorf("%d duplicate replies but only %d counted resends: %v", len(dups), resends, dups)
	} else if len(dups) > 0 {
		t.Logf("duplicates, all explained by counted resends: %v", dups)
	}
	// Each chat's answers in order: of two messages the platform delivered
	// back to back, the second is never answered before the first (both in
	// one answer is fine: mid-turn messages join the next turn). Only pairs
	// answered within the wait count. A pair whose first message Slack
	// delivered again (its envelope was left unacknowledged by a killed
	// replica) is not ordered by the platform either: the retry comes 400 ms
	// later, after the second. Those are listed apart. Counted as swaps they
	// are the likely cause of one run in ~20 exceeding the 1 % bound (19
	// swaps): in the runs since, every swap seen was one of them.
	ordered, slackPairs := 0, 0
	var slackSwapped, slackLate []string
	for _, m := range sent {
		if m.prev == "" || !m.inice {
			continue
		}
		first, second := sightings[m.prev], sightings[m.tok]
		ordered++
		slack := loadtest.PlatformOf(m.chat) == loadtest.Slack
		if slack {
			slackPairs++
		}
		if !second.First.Before(first.First) {
			continue
		}
		if slack && s.r.p.Redelivered(m.prev) {
			// The first message was left unacknowledged by a killed (or
			// stalled) replica and Slack delivered it again 400 ms later,
			// after the second: the platform's own order.
			slackLate = append(slackLate, m.prev+"/"+m.tok)
			continue
		}
		if slack {
			// Slack may hand the two events to two replicas' connections;
			// the later one can then be accepted first (see channels/hub
			// claims.go). Counted, bounded below.
			slackSwapped = append(slackSwapped, m.prev+"/"+m.tok)
			continue
		}
		t.Errorf("chat %d: %s was answered before %s, sent just before it", m.chat, m.tok, m.prev)
	}
	if len(slackSwapped)*100 > slackPairs {
		t.Errorf("%d of %d Slack pairs answered the other way round (more than 1%%): %v", len(slackSwapped), slackPairs, slackSwapped)
	}
	if ordered < len(sent)/4 {
		t.Errorf("only %d of %d pairs were answered within the wait: the order check saw too little", ordered, len(sent)/2)
	}
	if n := s.r.p.Telegram.Conflicts(); n > 0 {
		t.Errorf("the Telegram fake answered %d getUpdates with 409: two replicas polled at once", n)
	}
	var ticks []faketelegram.SentMessage
	for _, m := range s.r.p.Telegram.Sent(tickChat) {
		if strings.Contains(m.Plain, "tick") {
			ticks = append(ticks, m)
		}
	}
	// Exactly once per slot: never more deliveries than slots went by (a
	// slot missed during a leader change is delivered late once, misfire
	// run_once, so two deliveries may be close together).
	if slots := int(time.Since(began)/(3*time.Second)) + 1; len(ticks) > slots {
		t.Errorf("%d reminder deliveries for %d slots of the every-3s job: a slot fired twice", len(ticks), slots)
	}
	var worst time.Duration
	for _, d := range takeovers {
		worst = max(worst, d)
	}
	if worst > clusterTTL+2*time.Second {
		t.Errorf("Telegram polling taken over after %v, want within lease_ttl + 2s = %v", worst, clusterTTL+2*time.Second)
	}
	if len(takeovers) == 0 {
		t.Errorf("no kill of the Telegram poller was measured")
	}
	t.Logf("%d kills of %d replicas; %d messages from %d chats, %d unanswered Discord first contacts; %d resends, %d duplicates; "+
		"%d reminder deliveries; %d pairs in order, %d of %d Slack pairs swapped (and %d whose first message Slack redelivered: %v); Telegram polling taken over %d times, worst %v (lease ttl %v): %v",
		kills, replicas, len(sent), chats, len(firstContact), resends, len(dups), len(ticks), ordered, len(slackSwapped), slackPairs, len(slackLate), slackLate, len(takeovers), worst, clusterTTL, takeovers)
	if slots := int(time.Since(began) / (3 * time.Second)); len(ticks) < slots/3 {
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "tick") || strings.Contains(l, "job") || strings.Contains(l, "schedul") {
				lines = append(lines, l)
			}
		}
		t.Errorf("only %d reminder deliveries for %d slots: the scheduler did not run; its log lines:\n%s", len(ticks), slots,
			strings.Join(lines[:min(len(lines), 30)], "\n"))
	}
}

// chatOf is the chat number of a token made by loadtest.Token.
func chatOf(tok string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(tok[:strings.IndexByte(tok, 'x')], "q"))
	return n
}

// grepLines returns the lines of out containing any of subs (at most 40).
func grepLines(out string, subs ...string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				lines = append(lines, l)
				break
			}
		}
	}
	return strings.Join(lines[:min(len(lines), 40)], "\n")
}
