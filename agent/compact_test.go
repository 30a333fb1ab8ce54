package agent

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

// sessionTurn is turn i of a prefilled session: every 9th turn used a tool.
func sessionTurn(i int, at time.Time, pad string) memory.Turn {
	msgs := []memory.Message{{Role: memory.RoleUser, Name: "Ann", Content: fmt.Sprintf("question %d%s", i, pad), Time: at}}
	if i%9 == 0 {
		id := fmt.Sprintf("call_t%d", i)
		msgs = append(msgs,
			memory.Message{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: id, Name: "lookup", Arguments: fmt.Sprintf(`{"n":%d}`, i)}}, Time: at},
			memory.Message{Role: memory.RoleTool, ToolCallID: id, Name: "lookup", Content: fmt.Sprintf("lookup result %d", i), Time: at})
	}
	msgs = append(msgs, memory.Message{Role: memory.RoleAssistant, Content: fmt.Sprintf("answer %d%s", i, pad), Time: at})
	return memory.Turn{ID: fmt.Sprintf("turn-%d", i), Messages: msgs, Started: at, Ended: at, FinishReason: "final", Answer: msgs[len(msgs)-1].Content}
}

// prefill commits turns 1..n; with 90 turns that is 200 messages.
func prefill(t *testing.T, s Sessions, key string, n int, pad string) int {
	t.Helper()
	total := 0
	for i := 1; i <= n; i++ {
		tn := sessionTurn(i, testNow.Add(time.Duration(i)*time.Minute), pad)
		total += len(tn.Messages)
		if err := s.AppendTurn(context.Background(), key, tn); err != nil {
			t.Fatal(err)
		}
	}
	return total
}

func isSummarizer(r *fakellm.Request) bool { return r.SystemPrompt() == summarizerPrompt }

// compactResponder answers summarizer calls with SUMMARY-<n> (or fail) and
// turns with "answer to <question>".
func compactResponder(fail bool, summaries *atomic.Int32) fakellm.Responder {
	return func(r *fakellm.Request) fakellm.Response {
		if isSummarizer(r) {
			if fail {
				return fakellm.Response{Status: 500, ErrorMessage: "summarizer overloaded"}
			}
			return fakellm.Response{Content: fmt.Sprintf("SUMMARY-%d: Ann asked numbered questions.", summaries.Add(1))}
		}
		return fakellm.Response{Content: "answer to " + r.LastUserText()}
	}
}

func newCompactHarness(t *testing.T, r fakellm.Responder, sessions Sessions, notes NotesStore, mut func(*Options)) (*fakellm.Server, *Agent) {
	t.Helper()
	srv := fakellm.Start(t, r)
	o := Options{BaseURL: srv.URL, APIKey: testKey, Model: "fake-model", HTTPClient: srv.HTTPClient(),
		Sleep: (&sleeps{}).sleep, Location: time.UTC, Now: func() time.Time { return testNow.Add(24 * time.Hour) },
		Sessions: sessions, Notes: notes, MaxHistory: 40, MaxRetries: 2, RetryBase: time.Millisecond}
	if mut != nil {
		mut(&o)
	}
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return srv, a
}

// history returns the request's messages between the system messages and
// the current user message.
func history(r *fakellm.Request) []openai.ChatCompletionMessage {
	msgs := r.Body.Messages
	i := 0
	for i < len(msgs) && msgs[i].Role == openai.ChatMessageRoleSystem {
		i++
	}
	return msgs[i : len(msgs)-1]
}

// checkWellFormed asserts a history starts a turn and every tool call has its result.
func checkWellFormed(t *testing.T, h []openai.ChatCompletionMessage) {
	t.Helper()
	if len(h) > 0 && h[0].Role != openai.ChatMessageRoleUser {
		t.Fatalf("history must start at a turn boundary (a user message), starts with %s %q", h[0].Role, h[0].Content)
	}
	for i, m := range h {
		for j, tc := range m.ToolCalls {
			if i+1+j >= len(h) || h[i+1+j].ToolCallID != tc.ID {
				t.Fatalf("tool call %s without its result", tc.ID)
			}
		}
	}
}

var summaryHeadTest = regexp.MustCompile(`^\[conversation summary v1 kind=(\w+) turns=(\d+) messages=(\d+) resets=0 next=[0-9a-f]*\]\n`)

func summaryNotes(t *testing.T, st memory.Store, key string) []memory.Note {
	t.Helper()
	notes, err := st.ListNotes(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var out []memory.Note
	for _, n := range notes {
		if IsSummaryNote(n.Text) {
			out = append(out, n)
		}
	}
	return out
}

func TestCompactionSummarizesOlderTurns(t *testing.T) {
	st := openTestStore(t, func() time.Time { return testNow })
	const key = "telegram:7"
	if total := prefill(t, st, key, 90, ""); total != 200 {
		t.Fatalf("prefilled %d messages", total)
	}
	if _, err := st.AddNote(context.Background(), key, "Ann likes numbered lists."); err != nil {
		t.Fatal(err)
	}
	var summaries atomic.Int32
	srv, a := newCompactHarness(t, compactResponder(false, &summaries), st, st, nil)

	res, err := a.ProcessMessage(context.Background(), Request{SessionKey: key, Text: "question 91"})
	if err != nil || res.Text != "answer to question 91" {
		t.Fatalf("turn: %q %v", res.Text, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !isSummarizer(reqs[0]) || reqs[0].HasTools() || isSummarizer(reqs[1]) {
		t.Fatalf("want one summarizer call (no tools) then the turn, got %d requests", len(reqs))
	}
	// The summarizer got the oldest whole turns, oldest first, ending with a
	// turn's answer; the turn got the summary and the rest verbatim.
	transcript := reqs[0].Body.Messages[1].Content
	m := regexp.MustCompile(`<transcript turns="1-(\d+)">\n\[user Ann\]: question 1\n`).FindStringSubmatch(transcript)
	if m == nil {
		t.Fatalf("transcript: %.300q", transcript)
	}
	k := 0
	fmt.Sscan(m[1], &k)
	if !strings.Contains(transcript, fmt.Sprintf("[assistant]: answer %d\n</transcript>", k)) ||
		!strings.Contains(transcript, "[assistant]: (called lookup({\"n\":9}))\n[result of lookup]: lookup result 9") {
		t.Fatalf("transcript must hold whole turns 1-%d: %q", k, transcript[len(transcript)-200:])
	}
	h := history(reqs[1])
	checkWellFormed(t, h)
	if h[0].Content != fmt.Sprintf("question %d", k+1) || len(h) > 20 {
		t.Fatalf("verbatim history: %d messages starting %q (summary covers 1-%d)", len(h), h[0].Content, k)
	}
	notesMsg := reqs[1].Body.Messages[1]
	if notesMsg.Role != openai.ChatMessageRoleSystem || !strings.Contains(notesMsg.Content, "Ann likes numbered lists.") ||
		!strings.Contains(notesMsg.Content, fmt.Sprintf("The oldest %d turns of this conversation are no longer shown; this is their summary.", k)) ||
		!strings.Contains(notesMsg.Content, "<conversation-summary>\nSUMMARY-1: Ann asked numbered questions.\n</conversation-summary>") {
		t.Fatalf("notes message: %q", notesMsg.Content)
	}
	sn := summaryNotes(t, st, key)
	if len(sn) != 1 {
		t.Fatalf("summary notes: %+v", sn)
	}
	head := summaryHeadTest.FindStringSubmatch(sn[0].Text)
	coveredMsgs := 0
	for i := 1; i <= k; i++ {
		coveredMsgs += len(sessionTurn(i, testNow, "").Messages)
	}
	if head == nil || head[1] != "summary" || head[2] != m[1] || head[3] != fmt.Sprint(coveredMsgs) {
		t.Fatalf("summary note head %q (want turns=%d messages=%d)", sn[0].Text, k, coveredMsgs)
	}
	var compacting bool
	for _, e := range res.Trace {
		compacting = compacting || e.To == string(StateCompacting)
	}
	if !compacting {
		t.Fatal("the trace must record the compacting state")
	}

	// The covered range is not summarized again: the next turns only add
	// their own request until the uncovered part exceeds the window again.
	again := 0
	for i := 92; i < 120 && again == 0; i++ {
		before := srv.RequestCount()
		if _, err := a.ProcessMessage(context.Background(), Request{SessionKey: key, Text: fmt.Sprintf("question %d", i)}); err != nil {
			t.Fatal(err)
		}
		r := srv.Requests()[before:]
		last := r[len(r)-1]
		h := history(last)
		checkWellFormed(t, h)
		if len(h) > 40 || !strings.Contains(last.Body.Messages[1].Content, "SUMMARY-") {
			t.Fatalf("turn %d: %d history messages, notes %q", i, len(h), last.Body.Messages[1].Content)
		}
		if len(r) == 1 {
			continue
		}
		again = i
		if len(r) != 2 || !isSummarizer(r[0]) {
			t.Fatalf("turn %d: %d requests", i, len(r))
		}
		if !strings.Contains(r[0].Body.Messages[1].Content, fmt.Sprintf("<previous-summary turns=\"1-%d\">\nSUMMARY-1: Ann asked numbered questions.\n</previous-summary>", k)) ||
			!strings.Contains(r[0].Body.Messages[1].Content, fmt.Sprintf("<transcript turns=\"%d-", k+1)) {
			t.Fatalf("the second summary must fold in the first and continue after it: %.400q", r[0].Body.Messages[1].Content)
		}
	}
	// 20 messages stay verbatim after a compaction and each turn adds 2: the
	// window (40) is exceeded again after 10 turns, not on every turn.
	if again != 102 {
		t.Fatalf("second compaction at turn %d, want 102", again)
	}
	sn = summaryNotes(t, st, key)
	if len(sn) != 1 || !strings.Contains(sn[0].Text, "SUMMARY-2") {
		t.Fatalf("the new summary replaces the old one: %+v", sn)
	}
}

func TestCompactionSurvivesSummarizerFailure(t *testing.T) {
	st := openTestStore(t, func() time.Time { return testNow })
	const key = "discord:55"
	prefill(t, st, key, 90, "")
	srv, a := newCompactHarness(t, compactResponder(true, nil), st, st, nil)
	for i, text := range []string{"question 91", "question 92"} {
		before := srv.RequestCount()
		res, err := a.ProcessMessage(context.Background(), Request{SessionKey: key, Text: text})
		if err != nil || res.Text != "answer to "+text {
			t.Fatalf("turn %d must still answer: %q %v", i, res.Text, err)
		}
		r := srv.Requests()[before:]
		wantSummarizer := 0
		if i == 0 {
			wantSummarizer = 3 // the first try and MaxRetries=2 retries, all 500
		}
		n := 0
		for _, q := range r {
			if isSummarizer(q) {
				n++
			}
		}
		if n != wantSummarizer || len(r) != n+1 {
			t.Fatalf("turn %d: %d summarizer calls of %d requests; want %d (the excerpt covers the dropped turns)", i, n, len(r), wantSummarizer)
		}
		last := r[len(r)-1]
		h := history(last)
		checkWellFormed(t, h)
		if len(h) > 22 {
			t.Fatalf("turn %d: history not bounded: %d messages", i, len(h))
		}
		notes := last.Body.Messages[1].Content
		if !strings.Contains(notes, "Summarizing them failed, so this is a shortened excerpt of them") ||
			!regexp.MustCompile(`- turn \d+: Ann: question \d+ → answer \d+`).MatchString(notes) {
			t.Fatalf("turn %d notes message: %q", i, notes)
		}
	}
	sn := summaryNotes(t, st, key)
	if len(sn) != 1 || !strings.HasPrefix(sn[0].Text, "[conversation summary v1 kind=excerpt turns=") {
		t.Fatalf("an excerpt note must exist: %+v", sn)
	}
}

// inMemoryStore-backed sessions have no counters: compaction reads the whole
// history, groups it into turns itself, and the token budget triggers it.
func TestCompactionByTokenBudget(t *testing.T) {
	st := openTestStore(t, func() time.Time { return testNow })
	sessions := NewMemorySessions()
	const key = "slack:C1"
	pad := " " + strings.Repeat("x", 800)
	prefill(t, sessions, key, 10, pad) // ~21 messages of ~800 bytes ≈ 4,300 tokens
	var summaries atomic.Int32
	srv, a := newCompactHarness(t, compactResponder(false, &summaries), sessions, st, func(o *Options) {
		o.ContextTokens = 2000 // history budget 1,000 tokens; after compaction ≤ 500
	})
	if _, err := a.ProcessMessage(context.Background(), Request{SessionKey: key, Text: "question 11"}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !isSummarizer(reqs[0]) {
		t.Fatalf("the token budget must trigger a summary; %d requests", len(reqs))
	}
	h := history(reqs[1])
	checkWellFormed(t, h)
	size := 0
	for _, m := range h {
		size += len(m.Content)
	}
	if size/4 > 500 || len(h) == 0 || !strings.HasPrefix(h[0].Content, "question 10 ") {
		t.Fatalf("verbatim history ≈%d tokens, %d messages, first %.20q", size/4, len(h), h[0].Content)
	}
	if !strings.Contains(reqs[0].Body.Messages[1].Content, `<transcript turns="1-9">`) {
		t.Fatalf("turns 1-9 summarized: %.100q", reqs[0].Body.Messages[1].Content)
	}
	// Next turn: covered turns 1-9 stay out of the window without a new summary.
	if _, err := a.ProcessMessage(context.Background(), Request{SessionKey: key, Text: "question 12"}); err != nil {
		t.Fatal(err)
	}
	last := srv.LastRequest()
	if srv.RequestCount() != 3 || !strings.HasPrefix(history(last)[0].Content, "question 10 ") {
		t.Fatalf("requests %d, history starts %.20q", srv.RequestCount(), history(last)[0].Content)
	}
}

func TestCompactionSummaryDroppedAfterReset(t *testing.T) {
	st := openTestStore(t, func() time.Time { return testNow })
	const key = "telegram:9"
	prefill(t, st, key, 90, "")
	if _, err := st.AddNote(context.Background(), key, "Ann likes numbered lists."); err != nil {
		t.Fatal(err)
	}
	var summaries atomic.Int32
	srv, a := newCompactHarness(t, compactResponder(false, &summaries), st, st, nil)
	if _, err := a.ProcessMessage(context.Background(), Request{SessionKey: key, Text: "question 91"}); err != nil {
		t.Fatal(err)
	}
	if len(summaryNotes(t, st, key)) != 1 {
		t.Fatal("expected a summary")
	}
	if err := st.ResetSession(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ProcessMessage(context.Background(), Request{SessionKey: key, Text: "fresh start"}); err != nil {
		t.Fatal(err)
	}
	last := srv.LastRequest()
	notes := last.Body.Messages[1].Content
	if strings.Contains(notes, "SUMMARY") || !strings.Contains(notes, "Ann likes numbered lists.") || len(history(last)) != 0 {
		t.Fatalf("after /reset: notes %q, history %d", notes, len(history(last)))
	}
	if n := summaryNotes(t, st, key); len(n) != 0 {
		t.Fatalf("the stale summary must be deleted: %+v", n)
	}
}

func TestCutCoveredAndGroupTurns(t *testing.T) {
	u := func(s string) memory.Message { return memory.Message{Role: memory.RoleUser, Content: s} }
	a := func(s string) memory.Message { return memory.Message{Role: memory.RoleAssistant, Content: s} }
	w := []memory.Message{u("1"), a("1"), u("2"), a("2"), u("3"), a("3")}
	tests := []struct {
		name      string
		uncovered int
		next      string
		want      string
	}{
		{"all uncovered", 9, "", "1 1 2 2 3 3"},
		{"by count", 2, "", "3 3"},
		{"none", 0, "", ""},
		{"fingerprint wins over count", 2, fingerprint(u("2")), "2 2 3 3"},
		{"unknown fingerprint falls back to count", 4, "0000000000000000", "2 2 3 3"},
	}
	for _, tt := range tests {
		var got []string
		for _, m := range cutCovered(w, tt.uncovered, tt.next) {
			got = append(got, m.Content)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%s: got %q want %q", tt.name, strings.Join(got, " "), tt.want)
		}
	}
	call := memory.Message{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: "c"}}}
	res := memory.Message{Role: memory.RoleTool, ToolCallID: "c"}
	greet := a("good morning") // a heartbeat turn: an answer without a request
	groups := groupTurns([]memory.Message{u("1"), call, res, a("1"), greet, u("2"), a("2")})
	var sizes []int
	for _, g := range groups {
		sizes = append(sizes, len(g))
	}
	if fmt.Sprint(sizes) != "[4 1 2]" {
		t.Fatalf("groups %v", sizes)
	}
}
