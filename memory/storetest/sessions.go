package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// SimpleTurn is "u<n>" answered by "a<n>".
func SimpleTurn(n int) memory.Turn {
	return memory.Turn{ID: fmt.Sprintf("t%d", n), Answer: fmt.Sprintf("a%d", n), FinishReason: "final", Messages: []memory.Message{
		{Role: memory.RoleUser, Content: fmt.Sprintf("u%d", n)},
		{Role: memory.RoleAssistant, Content: fmt.Sprintf("a%d", n)},
	}}
}

// ToolTurn is "u<n>", calls tools c<n>-0..c<n>-(calls-1) in one assistant
// message, their results, then "a<n>".
func ToolTurn(n, calls int) memory.Turn {
	t := memory.Turn{ID: fmt.Sprintf("t%d", n), Answer: fmt.Sprintf("a%d", n), FinishReason: "final"}
	t.Messages = append(t.Messages, memory.Message{Role: memory.RoleUser, Content: fmt.Sprintf("u%d", n)})
	am := memory.Message{Role: memory.RoleAssistant}
	for i := 0; i < calls; i++ {
		am.ToolCalls = append(am.ToolCalls, memory.ToolCall{ID: fmt.Sprintf("c%d-%d", n, i), Name: "current_time", Arguments: `{"tz":"UTC"}`})
	}
	t.Messages = append(t.Messages, am)
	for i := 0; i < calls; i++ {
		t.Messages = append(t.Messages, memory.Message{Role: memory.RoleTool, ToolCallID: fmt.Sprintf("c%d-%d", n, i), Name: "current_time", Content: fmt.Sprintf("r%d-%d", n, i)})
	}
	t.Messages = append(t.Messages, memory.Message{Role: memory.RoleAssistant, Content: fmt.Sprintf("a%d", n)})
	return t
}

// render shows a message list compactly: "u1", "a1", "call:c2-0,c2-1", "r:c2-0".
func render(msgs []memory.Message) []string {
	out := []string{}
	for _, m := range msgs {
		switch {
		case m.Role == memory.RoleTool:
			out = append(out, "r:"+m.ToolCallID)
		case len(m.ToolCalls) > 0:
			ids := make([]string, len(m.ToolCalls))
			for i, tc := range m.ToolCalls {
				ids[i] = tc.ID
			}
			s := "call:" + strings.Join(ids, ",")
			if m.Content != "" {
				s = m.Content + "+" + s
			}
			out = append(out, s)
		default:
			out = append(out, m.Content)
		}
	}
	return out
}

func (h harness) testTurnWithToolCallsRoundTrips(t *testing.T) {
	ctx := context.Background()
	s, clk, path := h.openTest(t)
	at := time.Date(2025, 3, 1, 11, 59, 0, 0, time.UTC)
	turn := memory.Turn{
		ID: "turn-1",
		Messages: []memory.Message{
			{Role: memory.RoleUser, Content: "what time is it in Tokyo and Paris?", Name: "Ann", Time: at,
				Media: []memory.MediaRef{{MIME: "image/png", Name: "clock.png", Size: 2048}}},
			{Role: memory.RoleAssistant, Content: "Let me check.", Reasoning: "two zones, two calls", Time: at, ToolCalls: []memory.ToolCall{
				{ID: "call_1", Name: "current_time", Arguments: `{"tz":"Asia/Tokyo"}`},
				{ID: "call_2", Name: "current_time", Arguments: `{"tz": "Europe/Paris", "fmt": "15:04"}`},
			}},
			{Role: memory.RoleTool, ToolCallID: "call_1", Name: "current_time", Content: "20:59", Time: at},
			{Role: memory.RoleTool, ToolCallID: "call_2", Name: "current_time", Content: "12:59", Time: at},
			{Role: memory.RoleAssistant, Content: "Tokyo 20:59, Paris 12:59.", Time: at},
		},
		Usage:        memory.Usage{PromptTokens: 120, CompletionTokens: 40, TotalTokens: 160},
		Started:      at,
		Ended:        at.Add(2 * time.Second),
		FinishReason: "final",
		Answer:       "Tokyo 20:59, Paris 12:59.",
	}
	mustNo(t, s.AppendTurn(ctx, "telegram:123:45", turn))
	mustNo(t, s.Close())
	s = h.openAt(t, path, TestOptions(clk))

	hist, err := s.LoadHistory(ctx, "telegram:123:45", 0)
	mustNo(t, err)
	if !reflect.DeepEqual(hist, turn.Messages) {
		t.Errorf("LoadHistory:\n got %+v\nwant %+v", hist, turn.Messages)
	}
	turns, err := s.SessionTurns(ctx, "telegram:123:45")
	mustNo(t, err)
	if len(turns) != 1 || !reflect.DeepEqual(turns[0], turn) {
		t.Errorf("SessionTurns:\n got %+v\nwant %+v", turns, turn)
	}
	meta, ok, err := s.Session(ctx, "telegram:123:45")
	mustNo(t, err)
	want := memory.SessionMeta{Key: "telegram:123:45", Created: clk.Now(), Updated: clk.Now(), LastUserMessage: at,
		Turns: 1, Messages: 5, Usage: turn.Usage, LastTurnID: "turn-1"}
	if !ok || !reflect.DeepEqual(meta, want) {
		t.Errorf("Session:\n got %+v\nwant %+v", meta, want)
	}
}

func (h harness) testLoadHistoryCutsAtTurnBoundaries(t *testing.T) {
	ctx := context.Background()
	s, _, _ := h.openTest(t)
	// a:1 holds u1 a1 | u2 call r r a2 | u3 a3   (2 + 5 + 2 = 9 messages)
	for _, turn := range []memory.Turn{SimpleTurn(1), ToolTurn(2, 2), SimpleTurn(3)} {
		mustNo(t, s.AppendTurn(ctx, "a:1", turn))
	}
	// a:2 holds u1 a1 | u2 call(4) r r r r a2: the last turn alone is 7 messages
	for _, turn := range []memory.Turn{SimpleTurn(1), ToolTurn(2, 4)} {
		mustNo(t, s.AppendTurn(ctx, "a:2", turn))
	}
	all1 := []string{"u1", "a1", "u2", "call:c2-0,c2-1", "r:c2-0", "r:c2-1", "a2", "u3", "a3"}
	cases := []struct {
		key   string
		limit int
		want  []string
	}{
		{"a:1", 0, all1},
		{"a:1", -1, all1},
		{"a:1", 9, all1},
		{"a:1", 100, all1},
		{"a:1", 8, all1[2:]},             // a1 would be first: its turn is cut
		{"a:1", 7, all1[2:]},             // exactly two whole turns
		{"a:1", 6, []string{"u3", "a3"}}, // would start at the tool call
		{"a:1", 4, []string{"u3", "a3"}}, // would start at a tool result
		{"a:1", 3, []string{"u3", "a3"}}, // would start at a2
		{"a:1", 2, []string{"u3", "a3"}}, // the last whole turn
		{"a:1", 1, []string{"a3"}},       // no whole turn fits: the condensed last turn, cut to its answer
		{"a:2", 6, []string{"u2", "a2"}}, // last turn too long: condensed to user + answer
		{"a:2", 9, []string{"u1", "a1", "u2", "call:c2-0,c2-1,c2-2,c2-3", "r:c2-0", "r:c2-1", "r:c2-2", "r:c2-3", "a2"}},
		{"a:2", 8, []string{"u2", "call:c2-0,c2-1,c2-2,c2-3", "r:c2-0", "r:c2-1", "r:c2-2", "r:c2-3", "a2"}},
		{"missing:1", 10, []string{}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/limit=%d", c.key, c.limit), func(t *testing.T) {
			got, err := s.LoadHistory(ctx, c.key, c.limit)
			mustNo(t, err)
			if !reflect.DeepEqual(render(got), c.want) {
				t.Errorf("LoadHistory(%s, %d) = %v, want %v", c.key, c.limit, render(got), c.want)
			}
			if c.limit > 0 && len(got) > c.limit {
				t.Errorf("returned %d messages, over the limit %d", len(got), c.limit)
			}
		})
	}
}

func (h harness) testSanitizeHistory(t *testing.T) {
	u := func(s string) memory.Message { return memory.Message{Role: memory.RoleUser, Content: s} }
	a := func(s string) memory.Message { return memory.Message{Role: memory.RoleAssistant, Content: s} }
	call := func(content string, ids ...string) memory.Message {
		m := memory.Message{Role: memory.RoleAssistant, Content: content}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, memory.ToolCall{ID: id, Name: "t", Arguments: "{}"})
		}
		return m
	}
	res := func(id string) memory.Message {
		return memory.Message{Role: memory.RoleTool, ToolCallID: id, Content: "ok"}
	}
	cases := []struct {
		name string
		in   []memory.Message
		want []string
	}{
		{"valid history unchanged", []memory.Message{u("q"), call("", "x"), res("x"), a("done")}, []string{"q", "call:x", "r:x", "done"}},
		{"orphan result at start", []memory.Message{res("x"), u("q"), a("done")}, []string{"q", "done"}},
		{"call without result (canceled turn)", []memory.Message{u("q"), call("", "x")}, []string{"q"}},
		{"call without result, then a new turn", []memory.Message{u("q"), call("", "x"), u("q2"), a("a2")}, []string{"q", "q2", "a2"}},
		{"one of two results missing", []memory.Message{u("q"), call("", "x", "y"), res("y"), a("done")}, []string{"q", "call:y", "r:y", "done"}},
		{"text of a call without result is kept", []memory.Message{u("q"), call("checking", "x"), u("q2")}, []string{"q", "checking", "q2"}},
		{"duplicate result dropped", []memory.Message{u("q"), call("", "x"), res("x"), res("x"), a("d")}, []string{"q", "call:x", "r:x", "d"}},
		{"result not following its call", []memory.Message{u("q"), call("", "x"), u("q2"), res("x"), a("d")}, []string{"q", "q2", "d"}},
		{"result for an unknown call", []memory.Message{u("q"), call("", "x"), res("x"), res("zzz"), a("d")}, []string{"q", "call:x", "r:x", "d"}},
		{"empty", nil, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := append([]memory.Message(nil), c.in...)
			got := render(memory.SanitizeHistory(c.in))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("SanitizeHistory = %v, want %v", got, c.want)
			}
			if !reflect.DeepEqual(in, c.in) {
				t.Error("SanitizeHistory modified its input")
			}
		})
	}
}

func (h harness) testCanceledTurnIsStoredButNotReplayedToModel(t *testing.T) {
	ctx := context.Background()
	s, _, _ := h.openTest(t)
	mustNo(t, s.AppendTurn(ctx, "a:1", SimpleTurn(1)))
	canceled := memory.Turn{ID: "t2", FinishReason: "canceled", Messages: []memory.Message{
		{Role: memory.RoleUser, Content: "u2"},
		{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: "c9", Name: "web_fetch", Arguments: `{"url":"http://x"}`}}},
	}}
	mustNo(t, s.AppendTurn(ctx, "a:1", canceled))
	mustNo(t, s.AppendTurn(ctx, "a:1", SimpleTurn(3)))
	got, err := s.LoadHistory(ctx, "a:1", 0)
	mustNo(t, err)
	if want := []string{"u1", "a1", "u2", "u3", "a3"}; !reflect.DeepEqual(render(got), want) {
		t.Errorf("history = %v, want %v", render(got), want)
	}
	turns, err := s.SessionTurns(ctx, "a:1")
	mustNo(t, err)
	if len(turns) != 3 || len(turns[1].Messages) != 2 || turns[1].Messages[1].ToolCalls[0].ID != "c9" {
		t.Errorf("the canceled turn must be kept verbatim for the audit trail: %+v", turns)
	}
}

func (h harness) testConcurrentSessions(t *testing.T) {
	ctx := context.Background()
	s, _, _ := h.openTest(t)
	const writers, sessions, perWriter = 24, 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("discord:%d", w%sessions)
			for i := 0; i < perWriter; i++ {
				tag := fmt.Sprintf("w%d-%d", w, i)
				turn := memory.Turn{ID: tag, Usage: memory.Usage{TotalTokens: 1}, Messages: []memory.Message{
					{Role: memory.RoleUser, Content: tag},
					{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: tag, Name: "x", Arguments: "{}"}}},
					{Role: memory.RoleTool, ToolCallID: tag, Content: tag},
					{Role: memory.RoleAssistant, Content: tag},
				}}
				if err := s.AppendTurn(ctx, key, turn); err != nil {
					errs <- err
					return
				}
				// readers run alongside writers
				if _, err := s.LoadHistory(ctx, key, 6); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	perSession := writers / sessions * perWriter
	for k := 0; k < sessions; k++ {
		key := fmt.Sprintf("discord:%d", k)
		meta, _, err := s.Session(ctx, key)
		mustNo(t, err)
		if meta.Turns != perSession || meta.Messages != 4*perSession || meta.Usage.TotalTokens != perSession {
			t.Errorf("%s meta = %+v, want %d turns", key, meta, perSession)
		}
		turns, err := s.SessionTurns(ctx, key)
		mustNo(t, err)
		next := map[int]int{} // writer → next expected turn index
		for _, turn := range turns {
			var w, i int
			if _, err := fmt.Sscanf(turn.ID, "w%d-%d", &w, &i); err != nil {
				t.Fatalf("turn id %q: %v", turn.ID, err)
			}
			if i != next[w] {
				t.Errorf("%s: writer %d turn %d arrived when %d was expected", key, w, i, next[w])
			}
			next[w] = i + 1
			for _, m := range turn.Messages {
				if m.Content != "" && m.Content != turn.ID || m.ToolCallID != "" && m.ToolCallID != turn.ID {
					t.Errorf("%s: turn %s holds a message of another turn: %+v", key, turn.ID, m)
				}
			}
			if len(turn.Messages) != 4 {
				t.Errorf("%s: turn %s has %d messages", key, turn.ID, len(turn.Messages))
			}
		}
	}
}

func (h harness) testAppendTurnMarksInboxAnswered(t *testing.T) {
	ctx := context.Background()
	s, _, _ := h.openTest(t)
	id1, _, err := s.Accept(ctx, memory.InboxItem{Channel: "slack", MessageID: "1700000000.000100", SessionKey: "slack:C1"})
	mustNo(t, err)
	id2, _, err := s.Accept(ctx, memory.InboxItem{Channel: "slack", MessageID: "1700000000.000200", SessionKey: "slack:C1"})
	mustNo(t, err)
	id3, _, err := s.Accept(ctx, memory.InboxItem{Channel: "slack", MessageID: "1700000000.000300", SessionKey: "slack:C1"})
	mustNo(t, err)
	mustNo(t, s.InboxDone(ctx, id3)) // already finished: a source that is gone is skipped
	turn := SimpleTurn(1)
	turn.ID, turn.Answer, turn.Sources = "turn-x", "the answer", []uint64{id1, id2, id3}
	mustNo(t, s.AppendTurn(ctx, "slack:C1", turn))

	items, err := s.InboxPending(ctx)
	mustNo(t, err)
	if len(items) != 2 {
		t.Fatalf("inbox = %+v, want items %d and %d", items, id1, id2)
	}
	for i, want := range []uint64{id1, id2} {
		it := items[i]
		if it.ID != want || it.State != memory.InboxAnswered || it.TurnID != "turn-x" || it.Answer != "the answer" {
			t.Errorf("item %d = %+v, want answered by turn-x", want, it)
		}
	}
	turns, err := s.SessionTurns(ctx, "slack:C1")
	mustNo(t, err)
	if !reflect.DeepEqual(turns[0].Sources, []uint64{id1, id2, id3}) {
		t.Errorf("turn sources = %v", turns[0].Sources)
	}
	mustNo(t, s.InboxDone(ctx, id1, id2))
	items, err = s.InboxPending(ctx)
	mustNo(t, err)
	if len(items) != 0 {
		t.Errorf("inbox after InboxDone = %+v", items)
	}
}

func (h harness) testResetArchivesSession(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := h.openTest(t)
	key := "telegram:7"
	mustNo(t, s.AppendTurn(ctx, key, SimpleTurn(1)))
	mustNo(t, s.AppendTurn(ctx, key, ToolTurn(2, 1)))
	mustNo(t, s.SetSessionPersona(ctx, key, "reporter"))

	mustNo(t, s.ResetSession(ctx, "telegram:nobody")) // unknown: no-op
	clk.Advance(time.Hour)
	mustNo(t, s.ResetSession(ctx, key))
	resetAt := clk.Now()

	hist, err := s.LoadHistory(ctx, key, 0)
	mustNo(t, err)
	if len(hist) != 0 {
		t.Errorf("history after reset = %v", render(hist))
	}
	meta, ok, err := s.Session(ctx, key)
	mustNo(t, err)
	if !ok || meta.Turns != 0 || meta.Messages != 0 || meta.Persona != "reporter" || len(meta.Archived) != 1 || !meta.Created.Equal(resetAt) {
		t.Fatalf("meta after reset = %+v", meta)
	}
	archives, err := s.ArchivedSessions(ctx, key)
	mustNo(t, err)
	if len(archives) != 1 || archives[0].ID != meta.Archived[0] || archives[0].Meta.Turns != 2 || archives[0].Meta.Messages != 6 || !archives[0].Archived.Equal(resetAt) {
		t.Fatalf("archives = %+v", archives)
	}
	if want := "0001-20250301T130000Z"; archives[0].ID != want {
		t.Errorf("archive id = %q, want %q", archives[0].ID, want)
	}
	arch, err := s.LoadArchive(ctx, key, archives[0].ID)
	mustNo(t, err)
	var got []string
	for _, tr := range arch.Turns {
		got = append(got, render(tr.Messages)...)
	}
	if want := []string{"u1", "a1", "u2", "call:c2-0", "r:c2-0", "a2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("archived messages = %v, want %v", got, want)
	}

	// The fresh session works, and a reset with nothing new archives nothing.
	mustNo(t, s.AppendTurn(ctx, key, SimpleTurn(3)))
	hist, _ = s.LoadHistory(ctx, key, 0)
	if want := []string{"u3", "a3"}; !reflect.DeepEqual(render(hist), want) {
		t.Errorf("history after reset + new turn = %v, want %v", render(hist), want)
	}
	clk.Advance(time.Minute)
	mustNo(t, s.ResetSession(ctx, key))
	mustNo(t, s.ResetSession(ctx, key))
	archives, _ = s.ArchivedSessions(ctx, key)
	if len(archives) != 2 || archives[1].Meta.Turns != 1 {
		t.Errorf("after second reset archives = %+v", archives)
	}
	if _, err := s.LoadArchive(ctx, key, "9999-nope"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("LoadArchive unknown: %v, want memory.ErrNotFound", err)
	}
}

func (h harness) testExportSessionJSON(t *testing.T) {
	ctx := context.Background()
	s, _, _ := h.openTest(t)
	key := "slack:C0123:1700000000.000100"
	mustNo(t, s.AppendTurn(ctx, key, SimpleTurn(1)))
	mustNo(t, s.ResetSession(ctx, key))
	mustNo(t, s.AppendTurn(ctx, key, ToolTurn(2, 1)))

	var buf bytes.Buffer
	mustNo(t, s.ExportSession(ctx, key, &buf))
	var doc struct {
		Format string `json:"format"`
		Meta   struct {
			Key      string   `json:"key"`
			Turns    int      `json:"turns"`
			Messages int      `json:"messages"`
			Archived []string `json:"archived"`
		} `json:"meta"`
		Turns []struct {
			ID       string `json:"id"`
			Messages []struct {
				Role       string `json:"role"`
				Content    string `json:"content"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID, Name, Arguments string
				} `json:"tool_calls"`
			} `json:"messages"`
		} `json:"turns"`
		Archives []struct {
			ID    string `json:"id"`
			Turns []struct {
				Messages []struct{ Content string } `json:"messages"`
			} `json:"turns"`
		} `json:"archives"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("export is not JSON: %v\n%s", err, buf.String())
	}
	if doc.Format != memory.ExportFormat || doc.Meta.Key != key || doc.Meta.Turns != 1 || doc.Meta.Messages != 4 {
		t.Errorf("export header = %+v", doc)
	}
	if len(doc.Turns) != 1 || doc.Turns[0].ID != "t2" || len(doc.Turns[0].Messages) != 4 {
		t.Fatalf("export turns = %+v", doc.Turns)
	}
	m := doc.Turns[0].Messages
	if m[0].Role != "user" || m[0].Content != "u2" || len(m[1].ToolCalls) != 1 || m[1].ToolCalls[0].Arguments != `{"tz":"UTC"}` ||
		m[2].Role != "tool" || m[2].ToolCallID != "c2-0" || m[3].Content != "a2" {
		t.Errorf("export messages = %+v", m)
	}
	if len(doc.Archives) != 1 || doc.Archives[0].ID != doc.Meta.Archived[0] || doc.Archives[0].Turns[0].Messages[0].Content != "u1" {
		t.Errorf("export archives = %+v", doc.Archives)
	}
	if err := s.ExportSession(ctx, "slack:none", &bytes.Buffer{}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("export of unknown session: %v, want memory.ErrNotFound", err)
	}
}

func (h harness) testListSessionsAndPersona(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := h.openTest(t)
	mustNo(t, s.AppendTurn(ctx, "a:old", SimpleTurn(1)))
	clk.Advance(time.Minute)
	mustNo(t, s.AppendTurn(ctx, "a:new", SimpleTurn(1)))
	clk.Advance(time.Minute)
	mustNo(t, s.SetSessionPersona(ctx, "a:fresh", "buddy")) // binding before the first message
	list, err := s.ListSessions(ctx)
	mustNo(t, err)
	var keys []string
	for _, m := range list {
		keys = append(keys, m.Key)
	}
	if want := []string{"a:fresh", "a:new", "a:old"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("ListSessions order = %v, want %v (most recently updated first)", keys, want)
	}
	if list[0].Persona != "buddy" || list[0].Messages != 0 {
		t.Errorf("persona-only session = %+v", list[0])
	}
	mustNo(t, s.SetSessionPersona(ctx, "a:fresh", ""))
	m, _, _ := s.Session(ctx, "a:fresh")
	if m.Persona != "" {
		t.Errorf("persona not cleared: %+v", m)
	}
	if _, ok, err := s.Session(ctx, "a:none"); ok || err != nil {
		t.Errorf("Session(unknown) = found %v, err %v", ok, err)
	}
	for _, key := range []string{"", "a:nonexistent"} {
		if h, err := s.LoadHistory(ctx, key, 5); err != nil || len(h) != 0 {
			t.Errorf("LoadHistory(%q) = %v, %v", key, h, err)
		}
		if tr, err := s.SessionTurns(ctx, key); err != nil || len(tr) != 0 {
			t.Errorf("SessionTurns(%q) = %v, %v", key, tr, err)
		}
	}
	if err := s.AppendTurn(ctx, "", SimpleTurn(1)); err == nil {
		t.Error("AppendTurn with empty key succeeded")
	}
	if err := s.AppendTurn(ctx, "a:x", memory.Turn{ID: "empty"}); err == nil {
		t.Error("AppendTurn of a turn without messages succeeded")
	}
}
