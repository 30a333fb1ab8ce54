package chaos

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
)

// bin is the switchboard binary built once for the package's tests.
var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "switchboard-chaos-")
		if binErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		binPath, binErr = loadtest.BuildBinary(ctx, binDir)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// rig is the fakes plus one daemon child at a time on a fixed data dir.
type rig struct {
	t     *testing.T
	p     *loadtest.Platforms
	bin   string
	cfg   string
	addr  string
	prog  *progress // an answer arrived (converse), a daemon became ready (start)
	mu    sync.Mutex
	procs []*loadtest.Proc
}

// Waits in these tests follow progress, not the wall clock: a machine at
// load average 10–17 on two cores (go test ./... beside other work) does
// everything several times slower, but it still moves. A wait gives up
// after a spell in which nothing moved (no answer arrived, no daemon became
// ready), never at a fixed time after it began; hangAfter only bounds a wait
// that keeps seeing progress yet never ends (a livelock), so that the test
// fails with its own message rather than the test binary's timeout.
const hangAfter = 3 * time.Minute

// readyWait bounds a daemon's start until /readyz answers 200: a hang
// detector (a start takes well under a second on a quiet machine, a few on
// a loaded one), not a performance bound.
const readyWait = 60 * time.Second

// progress is when a test last saw the system under test move.
type progress struct {
	mu   sync.Mutex
	last time.Time
	n    int           // progress noted so far
	next chan struct{} // closed by the next note
}

func newProgress() *progress { return &progress{last: time.Now(), next: make(chan struct{})} }

// note records progress now.
func (p *progress) note() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = time.Now()
	p.n++
	close(p.next)
	p.next = make(chan struct{})
}

// since is the time since the last progress.
func (p *progress) since() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Since(p.last)
}

// count is the progress noted so far and a channel closed by the next note.
func (p *progress) count() (int, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n, p.next
}

// await waits for ch (true) until quiet passed without any progress or ctx
// ended (false). Progress elsewhere moves the deadline; it is checked when
// the deadline comes, so waiters are not woken at every note.
func (p *progress) await(ctx context.Context, ch <-chan time.Time, quiet time.Duration) bool {
	for {
		left := quiet - p.since()
		if left <= 0 {
			return false
		}
		t := time.NewTimer(left)
		select {
		case <-ch:
			t.Stop()
			return true
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

func newRig(t *testing.T, m loadtest.ModelOptions, co loadtest.ConfigOptions) *rig {
	t.Helper()
	bin := binary(t)
	p, err := loadtest.StartPlatforms(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	dir := t.TempDir()
	addr, err := loadtest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	if co.Listen == "" {
		co.Listen = addr // so CLI commands reading the config find the daemon
	}
	cfg, err := p.WriteConfig(dir, co)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, p: p, bin: bin, cfg: cfg, addr: co.Listen, prog: newProgress()}
	t.Cleanup(func() {
		if proc := r.current(); proc != nil {
			proc.Kill()
		}
	})
	return r
}

// start runs a new daemon and waits until it is ready.
func (r *rig) start() *loadtest.Proc {
	r.t.Helper()
	proc, err := loadtest.StartProc(r.bin, r.cfg, r.addr, r.p.Env())
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.procs = append(r.procs, proc)
	r.mu.Unlock()
	if _, err := proc.WaitReady(context.Background(), readyWait); err != nil {
		r.t.Fatal(err)
	}
	r.prog.note()
	return proc
}

func (r *rig) current() *loadtest.Proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.procs) == 0 {
		return nil
	}
	return r.procs[len(r.procs)-1]
}

// output is everything every daemon of the rig wrote.
func (r *rig) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for i, p := range r.procs {
		fmt.Fprintf(&b, "--- daemon run %d ---\n%s", i+1, p.Output())
	}
	return b.String()
}

// result of driving conversations.
type result struct {
	answered  map[string]bool
	lost      map[string]loadtest.Platform // token → platform, no reply in time
	perPlat   map[loadtest.Platform]int
	sightings map[string]loadtest.Sighting
}

// converse drives chats closed-loop: each sends msgs messages, the next once
// the previous one was answered, or given up when wait passed without any
// progress (no answer in any chat, no daemon start): on a loaded machine
// answers come late but keep coming.
func (r *rig) converse(ctx context.Context, chats, msgs int, wait time.Duration) result {
	res := result{answered: map[string]bool{}, lost: map[string]loadtest.Platform{}, perPlat: map[loadtest.Platform]int{}}
	r.prog.note() // the conversation starts a fresh wait
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range msgs {
				tok := loadtest.Token(c, seq)
				ch := r.p.Expect(tok)
				r.p.Say(c, tok)
				ok := r.prog.await(ctx, ch, wait)
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				if ok {
					res.answered[tok] = true
					res.perPlat[loadtest.PlatformOf(c)]++
				} else {
					res.lost[tok] = loadtest.PlatformOf(c)
				}
				mu.Unlock()
				if ok {
					r.prog.note()
				}
			}
		}()
	}
	wg.Wait()
	// Late replies (a lost-looking message answered after all, e.g. after a
	// restart and a platform retry) still count: wait for them as long as
	// they keep coming, until a fresh wait passes without one; and always a
	// moment for replies still in flight.
	time.Sleep(300 * time.Millisecond)
	r.prog.note()
	began, left := time.Now(), len(res.lost)
	for ; ; time.Sleep(50 * time.Millisecond) {
		res.sightings = r.p.Sightings()
		for tok, pl := range res.lost {
			if _, ok := res.sightings[tok]; ok || r.onPlatform(tok, pl) {
				delete(res.lost, tok)
				res.answered[tok] = true
			}
		}
		if len(res.lost) < left {
			left = len(res.lost)
			r.prog.note()
		}
		if len(res.lost) == 0 || r.prog.since() > wait || time.Since(began) > hangAfter {
			break
		}
	}
	return res
}

// duplicates lists tokens that appear in more than one new platform message.
func (res result) duplicates() []string {
	var out []string
	for tok, s := range res.sightings {
		if s.Creates > 1 {
			out = append(out, fmt.Sprintf("%s×%d", tok, s.Creates))
		}
	}
	return out
}

// metric sums the samples of the daemon's Prometheus metric name whose
// labels contain every one of labels (e.g. `channel="slack"`).
func (r *rig) metric(name string, labels ...string) float64 {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+r.addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+loadtest.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// receivedEverywhere fails unless the daemon received at least n messages on
// each platform: a positive control, so "nothing was answered" cannot pass
// merely because nothing arrived.
func (r *rig) receivedEverywhere(n float64) {
	r.t.Helper()
	for _, ch := range []string{"telegram", "discord", "slack"} {
		if got := r.metric("switchboard_messages_in_total", `channel="`+ch+`"`); got < n {
			r.t.Errorf("the daemon received %v %s messages, want at least %v (the test did not reach it)", got, ch, n)
		}
	}
}

// onPlatform reports whether the bot's answer carrying tok is on the
// platform fake even though the tap saw no successful call: a post that
// reached the platform while the daemon was killed mid-call (the tap then
// answers 502), which the outbound path correctly does not resend when the
// platform can tell it already has it.
func (r *rig) onPlatform(tok string, pl loadtest.Platform) bool {
	switch pl {
	case loadtest.Slack:
		for _, p := range r.p.Slack.Posts() {
			if strings.Contains(p.Text, tok) {
				return true
			}
		}
	case loadtest.Discord:
		// A send that reached Discord while its replica was killed; the
		// replay's Verifier found it in the channel and did not resend.
		for _, m := range r.p.Discord.Sent(loadtest.DiscordChannelID(chatOf(tok))) {
			if strings.Contains(m.Content, tok) {
				return true
			}
		}
	}
	return false
}
