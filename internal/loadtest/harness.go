package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/internal/retry"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// Options configure one harness run.
type Options struct {
	Bin      string // switchboard binary (BuildBinary)
	Dir      string // work directory (config, data)
	Chats    int    // concurrent chats, spread round-robin over Platforms
	Messages int    // messages per chat, each sent once the previous is answered
	// Platforms the chats live on (nil = Telegram, Discord and Slack). A run
	// without Telegram also leaves its channel disabled in the daemon, so
	// Telegram's deliberate send pacing (30 msg/s) does not bound the run.
	Platforms []Platform

	ModelDelay      time.Duration // model latency before the first byte
	TokensPerSecond float64       // model streaming speed; 0 = instant

	// AnswerChars pads every user message so the echoed answer is about
	// this long (the token stays first); 0 = the bare token.
	AnswerChars int
	// TelegramUnpaced turns Telegram's send pacing off in the daemon
	// (channels.telegram.rate per_chat and global 0).
	TelegramUnpaced bool
	// PerfProfile, when set, records the daemon's CPU profile during the
	// load with `perf record -g` into this file (read it with perf report;
	// a binary built by BuildBinary keeps its symbols).
	PerfProfile string

	MaxConcurrentTurns int           // agent.max_concurrent_turns (default 64)
	ReplyTimeout       time.Duration // per message (default 30s)
	IdleSettle         time.Duration // wait after ready before sampling idle RSS (default 500ms)
	// IdleOnly measures the idle daemon (boot, RSS and where it lives) and
	// stops it without sending any message; Chats and Messages are ignored.
	IdleOnly bool
	Env      []string // extra child environment (GOGC=…, GOMEMLIMIT=…)
	// DaemonLog, when set, is where the daemon's output (its log, and
	// GODEBUG traces such as gctrace=1) is written once the run ends.
	DaemonLog string
	LogLevel  string // daemon log level (default warn)
	Logger    *slog.Logger
}

// Report is what one run measured.
type Report struct {
	Chats, Messages int
	Answered        int
	Duplicates      int // tokens seen in more than one newly created message
	Elapsed         time.Duration
	MessagesPerSec  float64

	// Latency from the platform message to the first platform call carrying
	// the reply, minus the configured model time for that reply.
	P50, P95, P99, Max time.Duration
	// PerPlatform holds the same percentiles per platform (Telegram paces
	// sends to 1 message/s per chat, so its tail shows that pacing).
	PerPlatform map[string][3]time.Duration

	BootToReady time.Duration
	Channels    int   // platform channels connected (3, or 2 without Telegram)
	IdleRSSKiB  int64 // Channels connected, no traffic
	IdleAnonKiB int64 // of which anonymous memory (heap, stacks, runtime)
	IdleFileKiB int64 // of which file-backed (the binary's text and data)
	// IdleMappings is the idle RSS by mapping (/proc/<pid>/smaps), largest first.
	IdleMappings []Mapping
	LoadRSSKiB   int64 // peak during the load
	// LoadAnonKiB and LoadFileKiB split the peak sample: anonymous memory
	// (heap, stacks, runtime) and file-backed pages (the binary, the
	// database's mapping).
	LoadAnonKiB, LoadFileKiB int64
	// LoadSections are the binary's sections resident at the end of the
	// load (ExeSections): where the file-backed part lives.
	LoadSections []Section
	// TelegramCalls counts the Bot API requests of the whole run by method
	// (getUpdates, sendMessage, sendMessageDraft, sendChatAction, …).
	TelegramCalls map[string]int
	DBBytes       int64 // switchboard.db after the run
	DBBytesPer1k  float64
	ModelRequests int
	// DaemonCPU and HarnessCPU split the CPU time spent during the load
	// between the daemon and this process (fakes, taps, drivers).
	DaemonCPU, HarnessCPU time.Duration
	// DaemonCPUPerMessage is DaemonCPU ÷ Answered (the daemon's threads'
	// run time, CPUTime).
	DaemonCPUPerMessage time.Duration
	// MinorFaults and MajorFaults are the daemon's page faults during the
	// load: a page of heap touched for the first time since it was handed
	// back, or a page of the binary mapped again after pagetrim, is a
	// minor fault; a major one waited for the disk.
	MinorFaults, MajorFaults int64
}

// Run drives one load run against a fresh daemon and data directory.
func Run(ctx context.Context, o Options) (Report, error) {
	if !o.IdleOnly && (o.Chats <= 0 || o.Messages <= 0) {
		return Report{}, errors.New("loadtest: Chats and Messages must be positive")
	}
	o = o.withDefaults()
	var modelTime sync.Map // token → time.Duration the model spent on it
	// An instant model is the lean EchoModel (fakellm's full request decoding
	// cost the harness as much CPU as a quarter of the daemon's); a slow one
	// is fakellm, which paces its chunks.
	mo := ModelOptions{Lean: true}
	if o.ModelDelay > 0 || o.TokensPerSecond > 0 {
		mo = ModelOptions{Responder: timedResponder(o, &modelTime)}
	}
	p, err := StartPlatforms(mo)
	if err != nil {
		return Report{}, err
	}
	defer p.Close()

	dataDir := filepath.Join(o.Dir, "data")
	cfg, err := p.WriteConfig(o.Dir, ConfigOptions{DataDir: dataDir, MaxConcurrentTurns: o.MaxConcurrentTurns, LogLevel: o.LogLevel,
		NoTelegram: !slices.Contains(o.Platforms, Telegram), NoDiscord: !slices.Contains(o.Platforms, Discord),
		NoSlack: !slices.Contains(o.Platforms, Slack), TelegramUnpaced: o.TelegramUnpaced})
	if err != nil {
		return Report{}, err
	}
	addr, err := FreeAddr()
	if err != nil {
		return Report{}, err
	}
	proc, err := StartProc(o.Bin, cfg, addr, append(p.Env(), o.Env...))
	if err != nil {
		return Report{}, err
	}
	defer proc.Kill()
	if o.DaemonLog != "" {
		defer func() {
			if err := os.WriteFile(o.DaemonLog, []byte(proc.Output()), 0o644); err != nil {
				o.Logger.Warn("daemon log", "err", err)
			}
		}()
	}
	rep := Report{Chats: o.Chats, Messages: o.Messages, Channels: len(o.Platforms)}
	if err := rep.measureIdle(ctx, proc, o.IdleSettle); err != nil {
		return rep, err
	}
	if o.IdleOnly {
		if err := proc.Stop(15 * time.Second); err != nil {
			o.Logger.Warn("daemon exit", "err", err)
		}
		return rep, nil
	}

	stopPerf := func() error { return nil }
	if o.PerfProfile != "" {
		if stopPerf, err = startPerf(proc.Pid(), o.PerfProfile); err != nil {
			return rep, err
		}
	}
	stopSampler := sampleRSS(proc.Pid(), rep.IdleRSSKiB) // peak RSS while the load runs
	cpu0, _ := CPUTime(proc.Pid())
	minor0, major0, _ := PageFaults(proc.Pid())
	self0, _ := CPUTime(os.Getpid())
	start := time.Now()
	lats, errs := driveChats(ctx, o, p, proc, &modelTime)
	rep.Elapsed = time.Since(start)
	if cpu1, err := CPUTime(proc.Pid()); err == nil {
		rep.DaemonCPU = cpu1 - cpu0
	}
	if minor1, major1, err := PageFaults(proc.Pid()); err == nil {
		rep.MinorFaults, rep.MajorFaults = minor1-minor0, major1-major0
	}
	if self1, err := CPUTime(os.Getpid()); err == nil {
		rep.HarnessCPU = self1 - self0
	}
	pk := stopSampler()
	if secs, err := ExeSections(proc.Pid()); err == nil {
		rep.LoadSections = secs
	} else {
		o.Logger.Warn("exe sections", "err", err)
	}
	rep.LoadRSSKiB, rep.LoadAnonKiB, rep.LoadFileKiB = pk.total, pk.anon, pk.file
	runErr := stopPerf()
	for e := range errs {
		runErr = errors.Join(runErr, e)
	}

	rep.addLatencies(lats, o.platformOf)
	rep.ModelRequests = p.ModelRequests()
	rep.TelegramCalls = p.TelegramTap.Calls()
	rep.finish(ctx, o, p, proc, dataDir)
	return rep, runErr
}

// withDefaults fills in the optional settings.
func (o Options) withDefaults() Options {
	if o.ReplyTimeout <= 0 {
		o.ReplyTimeout = 30 * time.Second
	}
	if o.IdleSettle <= 0 {
		o.IdleSettle = 500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if len(o.Platforms) == 0 {
		o.Platforms = []Platform{Telegram, Discord, Slack}
	}
	return o
}

// platformOf spreads chats over o.Platforms round-robin (with all three,
// the same spread as PlatformOf).
func (o Options) platformOf(chat int) Platform { return o.Platforms[chat%len(o.Platforms)] }

// timedResponder is the echo model slowed down as o asks; it records in
// modelTime, for every token it answers, the time the model spent on it.
func timedResponder(o Options, modelTime *sync.Map) fakellm.Responder {
	echo := fakellm.Echo()
	return func(r *fakellm.Request) fakellm.Response {
		out := echo(r)
		out.Delay = o.ModelDelay
		out.TokensPerSecond = o.TokensPerSecond
		mt := o.ModelDelay
		if o.TokensPerSecond > 0 {
			// role chunk + content chunks (5 runes each) + finish + usage,
			// with one pace between consecutive chunks.
			chunks := 3 + (utf8.RuneCountInString(out.Content)+4)/5
			mt += time.Duration(float64(chunks-1) * float64(time.Second) / o.TokensPerSecond)
		}
		for _, tok := range tokenRE.FindAllString(r.LastUserText(), -1) {
			modelTime.Store(tok, mt)
		}
		return out
	}
}

// measureIdle waits for the daemon to be ready, lets it settle and records
// boot time and idle memory.
func (rep *Report) measureIdle(ctx context.Context, proc *Proc, settle time.Duration) error {
	var err error
	if rep.BootToReady, err = proc.WaitReady(ctx, 20*time.Second); err != nil {
		return err
	}
	if err := retry.Sleep(ctx, settle); err != nil {
		return err
	}
	if rep.IdleRSSKiB, err = RSSKiB(proc.Pid()); err != nil {
		return err
	}
	if rep.IdleAnonKiB, rep.IdleFileKiB, err = RSSBreakdown(proc.Pid()); err != nil {
		return err
	}
	rep.IdleMappings, err = Mappings(proc.Pid())
	return err
}

// rssPeak is the peak RSS during the load, and the anonymous and
// file-backed parts of that peak sample.
type rssPeak struct{ total, anon, file int64 }

// sampleRSS samples pid's RSS every 20ms until the returned stop is called;
// stop returns the peak, at least initial.
func sampleRSS(pid int, initial int64) (stop func() rssPeak) {
	var mu sync.Mutex
	peak := rssPeak{total: initial}
	stopSampler := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampler:
				return
			case <-t.C:
				anon, file, err := RSSBreakdown(pid)
				mu.Lock()
				if err == nil && anon+file > peak.total {
					peak = rssPeak{total: anon + file, anon: anon, file: file}
				}
				mu.Unlock()
			}
		}
	}()
	return func() rssPeak {
		close(stopSampler)
		<-samplerDone
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// driveChats runs o.Chats closed-loop chats of o.Messages messages each and
// returns every chat's reply latencies (model time subtracted) and the
// chats' errors (the channel is closed).
func driveChats(ctx context.Context, o Options, p *Platforms, proc *Proc, modelTime *sync.Map) ([][]time.Duration, chan error) {
	lats := make([][]time.Duration, o.Chats)
	errs := make(chan error, o.Chats)
	var wg sync.WaitGroup
	for c := range o.Chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range o.Messages {
				tok := Token(c, seq)
				ch := p.Expect(tok)
				sent := time.Now()
				p.SayOn(o.platformOf(c), c, padded(tok, o.AnswerChars))
				select {
				case at := <-ch:
					d := at.Sub(sent)
					if v, ok := modelTime.Load(tok); ok {
						d -= v.(time.Duration)
					}
					lats[c] = append(lats[c], d)
				case <-time.After(o.ReplyTimeout):
					errs <- fmt.Errorf("chat %d (%s): no reply to %s within %v", c, o.platformOf(c), tok, o.ReplyTimeout)
					return
				case <-ctx.Done():
					errs <- ctx.Err()
					return
				case <-proc.Done():
					errs <- fmt.Errorf("daemon exited during the load: %v", proc.Err())
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return lats, errs
}

// padded is tok followed by filler words up to about n characters, so the
// echo model's answer ("echo: " and the user text) is about n long.
func padded(tok string, n int) string {
	const filler = " lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor"
	n -= len("echo: ")
	if len(tok) >= n {
		return tok
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(tok)
	for b.Len() < n {
		b.WriteString(filler[:min(len(filler), n-b.Len())])
	}
	return b.String()
}

// addLatencies fills in the answer count, throughput and the latency
// percentiles, overall and per platform, from every chat's latencies.
func (rep *Report) addLatencies(lats [][]time.Duration, platformOf func(chat int) Platform) {
	var all []time.Duration
	byPlatform := map[string][]time.Duration{}
	for c, l := range lats {
		all = append(all, l...)
		name := platformOf(c).String()
		byPlatform[name] = append(byPlatform[name], l...)
	}
	rep.PerPlatform = map[string][3]time.Duration{}
	for name, l := range byPlatform {
		slices.Sort(l)
		rep.PerPlatform[name] = [3]time.Duration{percentile(l, 50), percentile(l, 95), percentile(l, 99)}
	}
	rep.Answered = len(all)
	if rep.Elapsed > 0 {
		rep.MessagesPerSec = float64(rep.Answered) / rep.Elapsed.Seconds()
	}
	if rep.Answered > 0 {
		rep.DaemonCPUPerMessage = rep.DaemonCPU / time.Duration(rep.Answered)
	}
	slices.Sort(all)
	rep.P50, rep.P95, rep.P99 = percentile(all, 50), percentile(all, 95), percentile(all, 99)
	if len(all) > 0 {
		rep.Max = all[len(all)-1]
	}
}

// finish lets late duplicates (if any) land before counting them, then stops
// the daemon cleanly so the database is closed, and measures it.
func (rep *Report) finish(ctx context.Context, o Options, p *Platforms, proc *Proc, dataDir string) {
	_ = retry.Sleep(ctx, 200*time.Millisecond)
	for _, s := range p.Sightings() {
		if s.Creates > 1 {
			rep.Duplicates++
		}
	}
	if err := proc.Stop(15 * time.Second); err != nil {
		o.Logger.Warn("daemon exit", "err", err)
	}
	if st, err := os.Stat(filepath.Join(dataDir, "switchboard.db")); err == nil {
		rep.DBBytes = st.Size()
		if rep.Answered > 0 {
			rep.DBBytesPer1k = float64(st.Size()) / float64(rep.Answered) * 1000
		}
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// Markdown writes the report as a small table.
func (r Report) Markdown(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| chats × messages | %d × %d (%d answered, %d duplicates) |\n", r.Chats, r.Messages, r.Answered, r.Duplicates)
	fmt.Fprintf(&b, "| end to end | %.0f messages/s over %v |\n", r.MessagesPerSec, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "| latency to first reply (model time excluded) | p50 %v, p95 %v, p99 %v, max %v |\n",
		r.P50.Round(10*time.Microsecond), r.P95.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.Max.Round(10*time.Microsecond))
	for _, name := range []string{"telegram", "discord", "slack"} {
		if q, ok := r.PerPlatform[name]; ok {
			fmt.Fprintf(&b, "| — %s | p50 %v, p95 %v, p99 %v |\n", name,
				q[0].Round(10*time.Microsecond), q[1].Round(10*time.Microsecond), q[2].Round(10*time.Microsecond))
		}
	}
	fmt.Fprintf(&b, "| boot to ready | %v |\n", r.BootToReady.Round(100*time.Microsecond))
	fmt.Fprintf(&b, "| idle RSS (%d channels connected) | %.1f MiB (anonymous %.1f MiB, file-backed %.1f MiB) |\n",
		r.Channels, float64(r.IdleRSSKiB)/1024, float64(r.IdleAnonKiB)/1024, float64(r.IdleFileKiB)/1024)
	fmt.Fprintf(&b, "| peak RSS under load | %.1f MiB (anonymous %.1f MiB, file-backed %.1f MiB) |\n",
		float64(r.LoadRSSKiB)/1024, float64(r.LoadAnonKiB)/1024, float64(r.LoadFileKiB)/1024)
	if len(r.LoadSections) > 0 {
		var secs []string
		for _, s := range r.LoadSections {
			if s.SizeKiB >= 64 {
				secs = append(secs, fmt.Sprintf("%s %.1f of %.1f", s.Name, float64(s.ResidentKiB)/1024, float64(s.SizeKiB)/1024))
			}
		}
		fmt.Fprintf(&b, "| the binary resident at the end of the load (MiB) | %s |\n", strings.Join(secs, ", "))
	}
	fmt.Fprintf(&b, "| BoltDB file | %.1f MiB; %.0f KiB per 1,000 turns |\n", float64(r.DBBytes)/(1<<20), r.DBBytesPer1k/1024)
	fmt.Fprintf(&b, "| model requests | %d |\n", r.ModelRequests)
	if len(r.TelegramCalls) > 0 && r.Answered > 0 {
		var calls []string
		for _, m := range slices.Sorted(maps.Keys(r.TelegramCalls)) {
			calls = append(calls, fmt.Sprintf("%s %.2f", m, float64(r.TelegramCalls[m])/float64(r.Answered)))
		}
		fmt.Fprintf(&b, "| Telegram calls per answer | %s |\n", strings.Join(calls, ", "))
	}
	fmt.Fprintf(&b, "| CPU during the load | daemon %v, harness+fakes %v (of %v wall) |\n",
		r.DaemonCPU, r.HarnessCPU, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "| daemon CPU per message | %.2f ms |\n", float64(r.DaemonCPUPerMessage)/float64(time.Millisecond))
	if r.Answered > 0 {
		fmt.Fprintf(&b, "| daemon page faults during the load | minor %d (%.0f a message), major %d |\n",
			r.MinorFaults, float64(r.MinorFaults)/float64(r.Answered), r.MajorFaults)
	}
	_, _ = io.WriteString(w, b.String())
}

// IdleMarkdown writes the idle figures and the largest mappings.
func (r Report) IdleMarkdown(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| boot to ready | %v |\n", r.BootToReady.Round(100*time.Microsecond))
	fmt.Fprintf(&b, "| idle RSS (%d channels connected) | %.1f MiB (anonymous %.1f MiB, file-backed %.1f MiB) |\n",
		r.Channels, float64(r.IdleRSSKiB)/1024, float64(r.IdleAnonKiB)/1024, float64(r.IdleFileKiB)/1024)
	fmt.Fprintf(&b, "\n| mapping | RSS KiB | of which anonymous KiB |\n|---|---|---|\n")
	for i, m := range r.IdleMappings {
		if i == 12 {
			break
		}
		fmt.Fprintf(&b, "| %s | %d | %d |\n", m.Name, m.RSSKiB, m.AnonKiB)
	}
	_, _ = io.WriteString(w, b.String())
}
