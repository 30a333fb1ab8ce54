package ui

import (
	"encoding/json"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels/web"
)

// The chat page's live stream. Events (app.js):
//
//   - "history": the conversation re-rendered (turns with their tool calls
//     and traces, and the other messages), sent when the stream opens, when
//     a message that is no draft arrives, when a turn ends (typing off) and
//     once more when the turn's commit shows up in the store after that.
//   - "live": JSON chatLive, the running turn as the live area shows it:
//     the typing indicator, the drafts growing as the hub edits them (and
//     the text of a DeltaWriter turn), and the Approve / Deny card of a call
//     waiting for approval. Sent when the stream opens and whenever it
//     changes. A draft edit never re-renders the history, so the live
//     answer is not wiped and re-drawn at each edit, and a draft never shows
//     as a finished message.
//
// Markdown while it streams (issue 34): "live" carries the live area's
// content as HTML rendered here, by the same template and the same
// sanitizer as the page (markdownHTML: goldmark without raw HTML, safeLinks)
// — the only HTML the console makes from text. app.js puts it in place
// through a <template> element (whose content never runs a script) and
// builds no HTML from model text itself. It is bounded: a draft longer than
// maxLiveMarkdown is shown as plain text until it is finished, edits come at
// most every EditInterval from the hub (a slow view gets them coalesced),
// and a DeltaWriter turn's text is re-rendered at most every liveEvery.

// maxLiveMarkdown is the longest draft the live area renders as Markdown.
const maxLiveMarkdown = 64 << 10

// liveEvery is the shortest time between two renders of streamed deltas.
const liveEvery = 100 * time.Millisecond

// chatLive is what the chat's live area shows of the running turn.
type chatLive struct {
	Typing bool        `json:"typing"`
	Drafts []liveDraft `json:"drafts"`
	// HTML is the area's content as the "live" template renders it (set
	// when sent).
	HTML string `json:"html"`
	// Streamed is the text a DeltaWriter turn streamed so far; Approval
	// the card of the call waiting for approval.
	Streamed string        `json:"-"`
	Approval *approvalCard `json:"-"`
}

// liveDraft is one message the bot is still writing.
type liveDraft struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// upsert sets the text of draft id, adding it at the end when new.
func (l *chatLive) upsert(id, text string) {
	for i := range l.Drafts {
		if l.Drafts[i].ID == id {
			l.Drafts[i].Text = text
			return
		}
	}
	l.Drafts = append(l.Drafts, liveDraft{ID: id, Text: text})
}

// remove drops draft id and reports whether it was there.
func (l *chatLive) remove(id string) bool {
	for i := range l.Drafts {
		if l.Drafts[i].ID == id {
			l.Drafts = append(l.Drafts[:i], l.Drafts[i+1:]...)
			return true
		}
	}
	return false
}

// Shown reports whether the live area is visible.
func (l chatLive) Shown() bool {
	return l.Typing || len(l.Drafts) > 0 || l.Streamed != "" || l.Approval != nil
}

// ShowTyping reports whether "typing…" shows: a turn runs with no text yet.
func (l chatLive) ShowTyping() bool { return l.Typing && len(l.Drafts) == 0 && l.Streamed == "" }

// liveMarkdown renders a draft: sanitized Markdown (markdownHTML), or plain
// text past maxLiveMarkdown.
func liveMarkdown(s string) template.HTML {
	if len(s) > maxLiveMarkdown {
		return template.HTML("<pre>" + template.HTMLEscapeString(s) + "</pre>") //nolint:gosec // escaped
	}
	return template.HTML(strings.TrimSpace(string(markdownHTML(s)))) //nolint:gosec // markdownHTML's output, trimmed
}

// How often and how long the chat stream looks for a turn's commit after
// it ended or its answer arrived.
const (
	commitPoll = 100 * time.Millisecond
	commitWait = 10 * time.Second
)

// chatView is one open chat stream: what it has sent so far.
type chatView struct {
	s     *Server
	sse   *sseWriter
	r     *http.Request
	conv  string
	csrf  string // the session's, for the approval card's forms
	live  chatLive
	shown string // the newest stored turn when the history was last sent
	// flush is set while streamed deltas wait to be rendered (liveEvery).
	flush <-chan time.Time
}

// chatStream sends conversation conv's live events until the request ends
// or the server closes. It subscribes first and then sends the current
// state, so nothing that happens around the connection is missed: an answer
// that finished before the browser connected is in the first history, a
// turn running then is in the first live state.
func (s *Server) chatStream(w http.ResponseWriter, r *http.Request) {
	conv := r.FormValue("conv")
	if s.o.Chat == nil || !validConv(conv) {
		http.NotFound(w, r)
		return
	}
	events, cancel := s.o.Chat.Subscribe(conv)
	defer cancel()
	sse, ok := s.startSSE(w)
	if !ok {
		return
	}
	v := &chatView{s: s, sse: sse, r: r, conv: conv, csrf: csrfOf(r)}
	d, err := v.sendHistory()
	if err != nil {
		return
	}
	v.live = d.Live
	if v.sendLive() != nil {
		return
	}
	// A turn's commit can land after its end reached the chat: until the
	// newest stored turn changes (or commitWait passes), look again now and
	// then and send the history once more when it did.
	var recheck <-chan time.Time
	var waitUntil time.Time
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case ev, ok := <-events:
			if !ok {
				return // the channel stopped or this view fell behind: the browser reconnects
			}
			rendered, err := v.apply(ev)
			if err != nil {
				return
			}
			if rendered {
				waitUntil = s.o.Now().Add(commitWait)
				recheck = time.After(commitPoll)
			}
		case <-v.flush:
			v.flush = nil
			if v.sendLive() != nil {
				return
			}
		case <-recheck:
			recheck = nil
			if s.lastTurn(r, conv) != v.shown {
				if _, err := v.sendHistory(); err != nil {
					return
				}
			} else if s.o.Now().Before(waitUntil) {
				recheck = time.After(commitPoll)
			}
		}
	}
}

// apply sends what ev changes; rendered reports a history sent.
func (v *chatView) apply(ev ChatEvent) (rendered bool, err error) {
	switch ev.Kind {
	case web.KindDelta:
		if len(v.live.Streamed) < maxMarkdown {
			v.live.Streamed += ev.Text
		}
		if v.flush == nil {
			v.flush = time.After(liveEvery)
		}
		return false, nil
	case web.KindReset:
		v.live.Streamed = ""
		return false, v.sendLive()
	case web.KindTyping:
		if ev.Text != web.TypingOff {
			v.live.Typing = true
			return false, v.sendLive()
		}
		// The turn ended: its drafts are finished messages now, and the
		// turn is (or soon will be) in the store.
		v.live, v.flush = chatLive{}, nil
		if _, err := v.sendHistory(); err != nil {
			return false, err
		}
		return true, v.sendLive()
	case web.KindMessage, web.KindEdit:
		if ev.Live {
			v.live.upsert(ev.ID, ev.Text)
			return false, v.sendLive()
		}
		if _, err := v.sendHistory(); err != nil {
			return false, err
		}
		if v.live.remove(ev.ID) {
			err = v.sendLive()
		}
		return true, err
	}
	return false, nil
}

// sendHistory renders the conversation and sends it as "history".
func (v *chatView) sendHistory() (chatData, error) {
	v.shown = v.s.lastTurn(v.r, v.conv)
	d, err := v.s.chatData(v.r, v.conv, v.csrf)
	if err != nil {
		v.s.log.Error("render the chat", "err", err)
		return d, err
	}
	html, err := v.s.fragment("chat", "history", d)
	if err != nil {
		return d, err
	}
	return d, v.sse.send("history", html)
}

// sendLive sends the live area's state as "live", with the approval card
// of the call waiting now, if any (a request, and a decision, are messages
// of the chat, so every change of it comes with an event).
func (v *chatView) sendLive() error {
	v.s.liveApproval(v.conv, &v.live, v.csrf)
	live := v.live
	if live.Drafts == nil {
		live.Drafts = []liveDraft{}
	}
	html, err := v.s.fragment("chat", "live", live)
	if err != nil {
		return err
	}
	live.HTML = html
	b, err := json.Marshal(live)
	if err != nil {
		return err
	}
	return v.sse.send("live", string(b))
}

// lastTurn is the id of conv's newest stored turn ("" if none).
func (s *Server) lastTurn(r *http.Request, conv string) string {
	meta, _, err := s.o.Backend.Store().Session(r.Context(), webTarget(conv).String())
	if err != nil {
		return ""
	}
	return meta.LastTurnID
}
