package ui

import (
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/memory"
)

// The chat's conversation as the page shows it (issue 34, item 1): the
// stored turns and, between and inside them, what the store holds no turn
// for — the bot's other messages (command answers, an approval request and
// its decision) from channels/web's History, and the operator's own
// messages from its Posts, shown until the stored turn that answers them is
// there (a turn waiting for /approve is not stored yet, and a page reloaded
// then still shows what the operator said). The operator's messages are
// named You everywhere (the sender id stays Operator).

// chatEntry is one thing in the chat's history: a stored turn, or a message
// outside every stored turn.
type chatEntry struct {
	Turn *turnView
	Msg  *chatMsg
}

// chatMsg is a message outside the stored turns.
type chatMsg struct {
	Mine bool   // the operator's (else the bot's)
	Text string // untrusted: shown as text (Mine) or sanitized Markdown
	File string // the file the operator uploaded with it, if any
	Time time.Time
}

// approvalCard is the Approve / Deny buttons of the call that waits for
// approval in a chat (chatapproval.go answers them). The live area shows it
// under the request (a draft of the waiting turn), or alone when the
// request is not among the drafts.
type approvalCard struct {
	Conv   string
	Tool   string
	Detail string // the waiting call as the hub describes it; the forms send it back
	CSRF   string
	Draft  string // the id of the live draft that is the request ("" = none)
}

// chatLog builds the page's entries of conv from its stored turns and the
// web channel's messages, and completes live (the running turn's drafts,
// and the approval card when a call waits).
func (s *Server) chatLog(conv string, turns []memory.Turn, live chatLive, csrf string) ([]chatEntry, chatLive) {
	views := turnViews(turns, s.o.Stats)
	for i := range views {
		for j := range views[i].Items {
			if views[i].Items[j].Role == "user" {
				views[i].Items[j].Name = You
			}
		}
	}
	var since time.Time // messages before the first shown turn of a long chat are not shown
	if len(turns) > len(views) && len(views) > 0 {
		since = views[0].Started
	}
	var loose []chatMsg
	for _, ev := range finalTexts(s.o.Chat.History(conv)) {
		switch {
		case ev.Live: // the running turn's draft: the live area shows it
			live.upsert(ev.ID, ev.Text)
		case !answered(turns, ev.Text):
			loose = append(loose, chatMsg{Text: ev.Text, Time: ev.Time})
		}
	}
	s.liveApproval(conv, &live, csrf)
	for _, p := range s.o.Chat.Posts(conv) {
		if !coveredPost(turns, p.Text, p.Time) {
			loose = append(loose, chatMsg{Mine: true, Text: p.Text, File: p.File, Time: p.Time})
		}
	}
	var out []chatEntry
	for i := range views {
		out = append(out, chatEntry{Turn: &views[i]})
	}
	for i := range loose {
		m := loose[i]
		if m.Time.Before(since) {
			continue
		}
		if v := turnAt(views, m.Time); v != nil {
			v.insert(m)
			continue
		}
		out = append(out, chatEntry{Msg: &m})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at().Before(out[j].at()) })
	return out, live
}

func (e chatEntry) at() time.Time {
	if e.Turn != nil {
		return e.Turn.Started
	}
	return e.Msg.Time
}

// turnAt is the shown turn that ran at t, if any.
func turnAt(views []turnView, t time.Time) *turnView {
	for i := range views {
		v := &views[i]
		if !v.Started.IsZero() && !t.Before(v.Started) && !t.After(v.Started.Add(v.Duration)) {
			return v
		}
	}
	return nil
}

// insert places m among v's items by time: a message sent while the turn
// ran (an approval request, the operator's /approve).
func (v *turnView) insert(m chatMsg) {
	it := itemView{Role: "notice", Text: m.Text, Time: m.Time}
	if m.Mine {
		it = itemView{Role: "user", Name: You, Text: m.Text, Time: m.Time}
		if m.File != "" {
			it.Text = strings.TrimSpace("[file " + m.File + "] " + m.Text)
		}
	}
	i := sort.Search(len(v.Items), func(i int) bool { return v.Items[i].Time.After(m.Time) })
	v.Items = append(v.Items[:i], append([]itemView{it}, v.Items[i:]...)...)
}

// coveredPost reports whether the operator's message (text, sent at) is in a
// stored turn: one that started after it and took its text. A message merged
// into a later turn is covered by that one; a command (/help) never is.
func coveredPost(turns []memory.Turn, text string, at time.Time) bool {
	text = strings.TrimSpace(text)
	for _, t := range turns {
		if t.Started.Before(at) {
			continue
		}
		for _, m := range t.Messages {
			if m.Role == memory.RoleUser && (text == "" || strings.Contains(m.Content, text)) {
				return true
			}
		}
	}
	return false
}

// waitingApproval is the call waiting for approval in conv, if any.
func (s *Server) waitingApproval(conv string) (hub.WaitingApproval, bool) {
	key := webTarget(conv).String()
	for _, w := range s.o.Backend.Approvals() {
		if w.Session == key {
			return w, true
		}
	}
	return hub.WaitingApproval{}, false
}

// liveApproval sets live's approval card: the call waiting in conv now (nil
// when none), under the newest draft that is its request.
func (s *Server) liveApproval(conv string, live *chatLive, csrf string) {
	w, ok := s.waitingApproval(conv)
	if !ok {
		live.Approval = nil
		return
	}
	card := &approvalCard{Conv: conv, Tool: w.Tool, Detail: w.Detail, CSRF: csrf}
	for _, d := range live.Drafts {
		if isRequestOf(d.Text, card) {
			card.Draft = d.ID
		}
	}
	live.Approval = card
}

// isRequestOf reports whether text is the hub's request to approve card's
// call: it names the tool and shows the arguments' summary (the hub's
// Detail is "<tool> <summary>") on a line of its own, in a code block.
func isRequestOf(text string, card *approvalCard) bool {
	sum := strings.TrimPrefix(card.Detail, card.Tool+" ")
	return strings.Contains(text, card.Tool) && strings.Contains(text, "\n"+sum+"\n")
}

// csrfOf is the CSRF token of r's login session ("" without one).
func csrfOf(r *http.Request) string {
	if sess := sessionOf(r); sess != nil {
		return sess.csrf
	}
	return ""
}
