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

// clusterQuiet is how long the cluster test waits for a straggling answer
// without seeing any other straggler answered: longer than the longest
// pause the product may legitimately take on these paths (Telegram's poll
// and hand-over backoff grows to 30 s, Discord re-fetches a channel left
// behind every 15 s).
const clusterQuiet = 45 * time.Second

// pairRestarts is how many replica restarts a chat waits through for the
// answers to its pair before it gives up on them and goes on talking: each
// restart follows a kill whose duties (polling, shards, claims) another
// replica has taken over by then, so an answer still missing after several
// is lost or stuck, and the final wait decides which. Counting restarts,
// not seconds, keeps the wait in step with a machine that does everything
// slower.
const pairRestarts = 3

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
	// restarts is noted each time a replica became ready.
	restarts *progress
}

func newReplicaSet(t *testing.T, n int, m loadtest.ModelOptions) *replicaSet {
	t.Helper()
	url := pgtest.Start(t)
	r := newRig(t, m, loadtest.ConfigOptions{})
	s := &replicaSet{t: t, r: r, url: url, env: append(r.p.Env(), "DATABASE_URL="+url), cur: make([]*loadtest.Proc, n),
		restarts: newProgress()}
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
	if _, err := p.WaitReady(context.Background(), readyWait); err != nil {
		s.t.Fatalf("replica %d: %v\n%s", i, err, p.Output())
	}
	s.mu.Lock()
	s.cur[i] = p
	s.mu.Unlock()
	s.restarts.note()
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
// fakes, 100 chats, and two busy processes beside them (issue 27: the suite
// passes on a loaded machine). A random replica is SIGKILLed and restarted
// 20 times while the chats talk. Every message is answered exactly once
// (resends in the one send window counted apart; Discord messages sent
// before the bot ever heard of their channel listed apart), each chat's
// answers come in order, Telegram is never polled by two replicas at once
// (the fake answers 409 to overlapping pollers), the reminder due every 3 s
// fires at most once per slot across leader changes, and polling is taken
// over after every kill of its holder, within lease_ttl + 2 s plus what the
// machine's measured slowness adds (measured and printed).
func TestClusterSIGKILLReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: starts and kills three daemon binaries")
	}
	if raceEnabled {
		// The daemons are plain binaries either way; -race would only slow
		// the fakes in this process and distort the takeover times measured.
		t.Skip("chaos: the replica test measures takeover times; run it without -race")
	}
	cpuHog(t)
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

	var takeovers []takeover // written by the killer, read once it is done
	untaken := 0
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
				if tk, ok := s.awaitTakeover(ctx, db, p.Pid(), killed); ok {
					takeovers = append(takeovers, tk)
				} else if ctx.Err() == nil {
					untaken++
				}
			}
			s.start(victim)
		}
	}()

	// Each chat sends two messages back to back, waits for both answers (or
	// gives up on them after pairRestarts replica restarts), and goes on
	// until the kills are over.
	var mu sync.Mutex
	var sent []clusterMsg
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
				from, _ := s.restarts.count()
				got, over := 0, false
				for got < 2 && !over {
					n, restarted := s.restarts.count()
					if n-from >= pairRestarts {
						break
					}
					select {
					case <-cha:
						cha, got = nil, got+1
					case <-chb:
						chb, got = nil, got+1
					case <-restarted:
					case <-killerDone:
						over = true
					case <-ctx.Done():
						return
					}
				}
				mu.Lock()
				sent = append(sent, clusterMsg{tok: a, chat: c, seq: seq},
					clusterMsg{tok: b, chat: c, seq: seq + 1, prev: a, inice: got == 2})
				mu.Unlock()
				if over {
					return
				}
				time.Sleep(time.Duration(200+c%7*50) * time.Millisecond) // the user's pause, not a wait
			}
		}()
	}
	<-killerDone
	wg.Wait()
	stopped := time.Now()
	sightings, lost, firstContact := s.stragglers(sent)
	t.Logf("the chats stopped; the answers still missing then took %v", time.Since(stopped).Round(time.Millisecond))

	out := s.r.output()
	if dir := os.Getenv("CHAOS_LOG_DIR"); dir != "" { // keep every replica's output for a look afterwards
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("cluster-%d.log", os.Getpid())), []byte(out), 0o600)
	}
	resends := strings.Count(out, "resending a chunk")
	// Replies the user saw twice; a resent chunk that answered both
	// messages of a pair is one (the CI failure of 17b6817 counted its
	// two tokens: 10 "duplicates" of 6 resends were 5 repeated replies).
	dups := s.r.p.Repeats()
	for _, m := range lost {
		t.Errorf("message %s (%s) never answered; the replicas' log lines about it or its session:\n%s", m.tok,
			loadtest.PlatformOf(m.chat), grepLines(out, m.tok, sessionKey(m.chat)))
	}
	if len(dups) > resends {
		t.Errorf("%d duplicate replies but only %d counted resends: %v", len(dups), resends, dups)
	} else if len(dups) > 0 {
		t.Logf("duplicates, all explained by counted resends: %v", dups)
	}
	// Each chat's answers in order: of two messages the platform delivered
	// back to back, the second is never answered before the first (both in
	// one answer is fine: mid-turn messages join the next turn). Only pairs
	// answered before the chat gave up on them count. A pair whose first
	// message Slack delivered again (its envelope was left unacknowledged by
	// a killed replica) is not ordered by the platform either: the retry
	// comes 400 ms later, after the second. Those are listed apart. Counted
	// as swaps they are the likely cause of one run in ~20 exceeding the 1 %
	// bound (19 swaps): in the runs since, every swap seen was one of them.
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
	// Takeover times are measurements. On a machine that keeps up, the
	// README's figure is lease_ttl + lease_ttl/5 and the bound kept from the
	// first version of this test is lease_ttl + 2 s. A takeover is a few
	// timer-driven steps and database statements in the standing-by replica
	// (its next acquire tick after the lease expired by the database's
	// clock, one UPDATE) plus the killer's poll that sees it; on a loaded
	// machine each step is late by about as much as the same kind of step
	// here, so the bound grows by five times the worst lateness of the
	// killer's own poll step (a 20 ms sleep and one query of the lease
	// table) during that wait: it scales with the slowness measured, and
	// still catches a takeover that waits for something else (a lease left
	// to a full extra TTL, a missed release). Not scaled: every kill of the
	// poller is followed by a takeover.
	var worst takeover
	for _, tk := range takeovers {
		if tk.took > worst.took {
			worst = tk
		}
		if bound := clusterTTL + 2*time.Second + 5*tk.lag; tk.took > bound {
			t.Errorf("Telegram polling taken over %v after its holder was killed, want within lease_ttl + 2s + 5 × the poll lag measured meanwhile (%v) = %v",
				tk.took, tk.lag, bound)
		}
	}
	if untaken > 0 {
		t.Errorf("%d kills of the Telegram poller were not followed by a takeover within %v", untaken, takeoverHang)
	}
	if len(takeovers) == 0 && untaken == 0 {
		t.Errorf("no kill of the Telegram poller was measured")
	}
	t.Logf("%d kills of %d replicas; %d messages from %d chats, %d Discord messages sent before the bot first heard of their channel, unanswered: %v; "+
		"%d resends, %d duplicates; %d reminder deliveries; %d pairs in order, %d of %d Slack pairs swapped (and %d whose first message Slack redelivered: %v); "+
		"Telegram polling taken over %d times, worst %v (poll lag %v; lease ttl %v): %v",
		kills, replicas, len(sent), chats, len(firstContact), tokens(firstContact), resends, len(dups), len(ticks), ordered, len(slackSwapped), slackPairs,
		len(slackLate), slackLate, len(takeovers), worst.took, worst.lag, clusterTTL, takeovers)
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

// takeoverHang bounds the wait for another replica to take Telegram polling
// over after its holder was killed: a hang detector, 25 times the README's
// lease_ttl + lease_ttl/5.
const takeoverHang = 30 * clusterTTL

// takeover is one handover of Telegram polling after its holder was killed.
type takeover struct {
	took time.Duration // from the kill until another replica held telegram-poll
	lag  time.Duration // the worst lateness of the killer's 20 ms poll step meanwhile
}

func (tk takeover) String() string {
	return fmt.Sprintf("%v(lag %v)", tk.took.Round(time.Millisecond), tk.lag.Round(time.Millisecond))
}

// awaitTakeover polls the lease table until a replica other than the
// killed pid holds telegram-poll; false when none did within takeoverHang
// (or ctx ended).
func (s *replicaSet) awaitTakeover(ctx context.Context, db *pgx.Conn, pid int, killed time.Time) (takeover, bool) {
	const step = 20 * time.Millisecond
	var lag time.Duration
	for {
		at := time.Now()
		if h := s.holder(ctx, db, "telegram-poll"); h != 0 && h != pid {
			return takeover{took: time.Since(killed), lag: lag}, true
		}
		if ctx.Err() != nil || time.Since(killed) > takeoverHang {
			return takeover{}, false
		}
		time.Sleep(step)
		lag = max(lag, time.Since(at)-step)
	}
}

// clusterMsg is one message a chat of the cluster test sent.
type clusterMsg struct {
	tok   string
	chat  int
	seq   int
	prev  string // the message sent just before, in the same pair ("" for a pair's first)
	inice bool   // both messages of the pair were answered before the chat gave up on them
}

func tokens(ms []clusterMsg) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.tok)
	}
	return out
}

// stragglers waits, once the chats stopped, for the answers still missing
// as long as they keep coming: it gives up when clusterQuiet passed without
// one more message answered. It returns the sightings, the messages never
// answered, and apart the unanswered Discord messages sent before the bot
// first heard of their channel.
func (s *replicaSet) stragglers(sent []clusterMsg) (sightings map[string]loadtest.Sighting, lost, firstContact []clusterMsg) {
	began, moved, answered := time.Now(), time.Now(), -1
	for {
		sightings = s.r.p.Sightings()
		var n int
		lost, firstContact, n = s.unanswered(sent, sightings)
		if n > answered {
			answered, moved = n, time.Now()
		}
		if len(lost) == 0 || time.Since(moved) > clusterQuiet || time.Since(began) > hangAfter {
			return sightings, lost, firstContact
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unanswered lists the sent messages without an answer on the platform, and
// counts those with one.
//
// Discord messages sent before the bot first heard of their channel are
// listed apart (firstContact): Discord has no redelivery and a bot cannot
// list its DMs, so a channel's messages dispatched while no replica held
// shard 0 (DMs go to shard 0), before any replica had seen the channel and
// saved its cursor, cannot be known. Both messages of a chat's pair go out
// back to back, so such a gap loses the pair, not just its first message.
// The channel's first message a replica saw is the earliest one answered;
// every message after it is caught up from the channel's persisted cursor
// and counts in full. A Discord chat none of whose messages was answered is
// not excused.
func (s *replicaSet) unanswered(sent []clusterMsg, sightings map[string]loadtest.Sighting) (lost, firstContact []clusterMsg, answered int) {
	firstSeen := map[int]int{} // chat → seq of its earliest answered message
	var missing []clusterMsg
	for _, m := range sent {
		if _, ok := sightings[m.tok]; ok || s.r.onPlatform(m.tok, loadtest.PlatformOf(m.chat)) {
			answered++
			if f, ok := firstSeen[m.chat]; !ok || m.seq < f {
				firstSeen[m.chat] = m.seq
			}
			continue
		}
		missing = append(missing, m)
	}
	for _, m := range missing {
		if f, ok := firstSeen[m.chat]; ok && m.seq < f && loadtest.PlatformOf(m.chat) == loadtest.Discord {
			firstContact = append(firstContact, m)
		} else {
			lost = append(lost, m)
		}
	}
	return lost, firstContact, answered
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
