package daemon

// The admin API's session, audit, prompt, ask and chat endpoints: with the
// daemon running (and holding the database) the CLI's `sessions`, `audit`,
// `prompt`, `ask` and `chat` go through them; without it the CLI calls the
// same functions (Ask, ViewSession, BuildPrompt) on the store directly. Every
// endpoint sits behind the admin middleware (loopback or server.admin_token).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/memory"
)

// ErrBadRequest marks an admin request the operator got wrong (HTTP 400, CLI exit 2).
var ErrBadRequest = errors.New("bad request")

// requestError is an ErrBadRequest whose text is only the explanation.
type requestError struct{ msg string }

func (e *requestError) Error() string        { return e.msg }
func (e *requestError) Is(target error) bool { return target == ErrBadRequest }

func badRequest(format string, args ...any) error {
	return &requestError{msg: fmt.Sprintf(format, args...)}
}

// AskSession is the session `switchboard ask` keeps its conversation in.
const AskSession = "cli:ask"

// AskRequest is one `switchboard ask`.
type AskRequest struct {
	Session string // "" is refused; the CLI's default is AskSession
	Persona string // "" = personas.default
	Text    string
	NoTools bool
	New     bool // start a fresh conversation first (the old one is archived)
}

// maxAskBytes bounds one question (the same as a console line).
const maxAskBytes = 1 << 20

// Ask answers one question in req.Session. It refuses, before the model is
// called, an empty question or session and a persona that does not exist.
func Ask(ctx context.Context, ag *agent.Agent, st memory.Store, res *hub.Resolver, req AskRequest) (string, error) {
	if strings.TrimSpace(req.Session) == "" {
		return "", badRequest("the session key is empty: leave --session out to use %s", AskSession)
	}
	if strings.TrimSpace(req.Text) == "" {
		return "", badRequest("nothing to ask: give the question as text, e.g. switchboard ask \"what time is it in Tokyo?\"")
	}
	if len(req.Text) > maxAskBytes {
		return "", badRequest("the question is %d bytes; at most %d", len(req.Text), maxAskBytes)
	}
	if req.Persona != "" && res != nil && !slices.Contains(res.Names(), req.Persona) {
		return "", badRequest("no persona %q (have: %s)", req.Persona, strings.Join(res.Names(), ", "))
	}
	if req.New {
		if err := st.ResetSession(ctx, req.Session); err != nil {
			return "", fmt.Errorf("start a fresh session: %w", err)
		}
	}
	answer, err := ag.ProcessDirect(ctx, req.Session, req.Text, agent.DirectOptions{
		Persona: req.Persona, NoTools: req.NoTools, Runtime: agent.Runtime{Channel: "cli", ChatType: "direct"},
		Admin: true, // the operator: llm.budget limits it only with llm.budget.admins
	})
	if err != nil {
		return "", errors.New(agent.FriendlyError(err))
	}
	return answer, nil
}

// SessionView is a session's conversation as `sessions show` prints it.
type SessionView struct {
	Meta     memory.SessionMeta `json:"meta"`
	Archives []memory.Archive   `json:"archives,omitempty"`
	Turns    []memory.Turn      `json:"turns"`
}

// ViewSession reads session key (with its archives when asked).
func ViewSession(ctx context.Context, st memory.Store, key string, archives bool) (SessionView, error) {
	meta, ok, err := st.Session(ctx, key)
	if err != nil {
		return SessionView{}, err
	}
	if !ok {
		return SessionView{}, badRequest("no session %q (see `switchboard sessions list`)", key)
	}
	v := SessionView{Meta: meta}
	if archives {
		infos, err := st.ArchivedSessions(ctx, key)
		if err != nil {
			return v, err
		}
		for _, info := range infos {
			arc, err := st.LoadArchive(ctx, key, info.ID)
			if err != nil {
				return v, err
			}
			v.Archives = append(v.Archives, arc)
		}
	}
	v.Turns, err = st.SessionTurns(ctx, key)
	return v, err
}

// PromptView is the system prompt and runtime block a turn in a chat gets.
type PromptView struct {
	Persona string   `json:"persona"`
	System  []string `json:"system"`
	Runtime string   `json:"runtime"`
}

// BuildPrompt assembles the prompt a turn in target would get.
func BuildPrompt(ctx context.Context, ag *agent.Agent, res *hub.Resolver, target, sender, text string) (PromptView, error) {
	t, ok := channels.ParseTarget(target)
	if !ok {
		return PromptView{}, badRequest("--target %q is not a chat address like telegram:12345 or slack:C0123:1700000000.000100", target)
	}
	chatType := "direct"
	if t.ThreadID != "" {
		chatType = "thread"
	}
	req := agent.Request{SessionKey: t.String(), Text: text, Persona: res.Resolve(ctx, t),
		Runtime: agent.Runtime{Channel: t.Channel, ChatType: chatType, SenderName: sender, Formatting: FormattingHint(t.Channel)}}
	system, runtime, err := ag.Prompt(ctx, req)
	if err != nil {
		return PromptView{}, err
	}
	return PromptView{Persona: req.Persona, System: system, Runtime: runtime}, nil
}

// maxQuestionForm bounds the form that carries one question: a question of
// maxAskBytes is up to three times that size form-encoded (every byte of a
// non-Latin script becomes %XX), plus the other fields.
const maxQuestionForm = 3*maxAskBytes + 64<<10

// parseQuestionForm reads r's form, at most maxQuestionForm bytes. A bigger
// body is answered 413 naming the limit, any other unreadable form 400 (a
// form left unparsed would read as empty and be refused for a wrong reason);
// it reports whether the handler may go on.
func parseQuestionForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxQuestionForm)
	err := r.ParseForm()
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		http.Error(w, fmt.Sprintf("the request is over %d bytes: a question is at most %d bytes", maxQuestionForm, maxAskBytes), http.StatusRequestEntityTooLarge)
		return false
	case err != nil:
		writeJSON(w, nil, badRequest("unreadable form: %v", err))
		return false
	}
	return true
}

// registerAdminAPI adds this file's endpoints; wrap is the admin middleware.
func (d *Daemon) registerAdminAPI(mux *http.ServeMux, wrap func(http.Handler) http.Handler) {
	for pattern, h := range map[string]http.HandlerFunc{
		"GET /admin/sessions":        d.serveSessions,
		"GET /admin/sessions/show":   d.serveSessionShow,
		"GET /admin/sessions/export": d.serveSessionExport,
		"POST /admin/sessions/reset": d.serveSessionReset,
		"GET /admin/audit":           d.serveAudit,
		"GET /admin/prompt":          d.servePrompt,
		"POST /admin/ask":            d.serveAsk,
		"POST /admin/chat":           d.serveChat,
	} {
		mux.Handle(pattern, wrap(h))
	}
	d.registerConfigAPI(mux, wrap) // configcheck.go
}

// writeJSON answers v, or err as plain text (400 for ErrBadRequest).
func writeJSON(w http.ResponseWriter, v any, err error) {
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, ErrBadRequest) {
			code = http.StatusBadRequest
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (d *Daemon) serveSessions(w http.ResponseWriter, r *http.Request) {
	list, err := d.store.ListSessions(r.Context())
	if list == nil {
		list = []memory.SessionMeta{}
	}
	writeJSON(w, list, err)
}

func (d *Daemon) serveSessionShow(w http.ResponseWriter, r *http.Request) {
	v, err := ViewSession(r.Context(), d.store, r.FormValue("key"), r.FormValue("archives") == "1")
	writeJSON(w, v, err)
}

func (d *Daemon) serveSessionExport(w http.ResponseWriter, r *http.Request) {
	key := r.FormValue("key")
	if _, ok, err := d.store.Session(r.Context(), key); err != nil || !ok {
		writeJSON(w, nil, errors.Join(err, badRequest("no session %q (see `switchboard sessions list`)", key)))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := d.store.ExportSession(r.Context(), key, w); err != nil {
		d.log.Error("export session", "session", key, "err", err)
	}
}

func (d *Daemon) serveSessionReset(w http.ResponseWriter, r *http.Request) {
	key := r.FormValue("key")
	err := ResetSession(r.Context(), d.store, key, "admin-api", d.opts.Now())
	writeJSON(w, "reset "+key+" (the previous conversation is archived)", err)
}

// ResetSession archives and clears the session key and audits it as actor;
// the CLI's store path and the admin API share it. A key with no session is
// the operator's mistake (ErrBadRequest), not a reset that did nothing.
func ResetSession(ctx context.Context, st memory.Store, key, actor string, now time.Time) error {
	if key == "" {
		return badRequest("no session key given")
	}
	if _, ok, err := st.Session(ctx, key); err != nil {
		return err
	} else if !ok {
		return badRequest("no session %q (see `switchboard sessions list`)", key)
	}
	if err := st.ResetSession(ctx, key); err != nil {
		return err
	}
	return st.Audit(ctx, memory.AuditRecord{Time: now, Actor: actor, Action: "session.reset", Session: key})
}

func (d *Daemon) serveAudit(w http.ResponseWriter, r *http.Request) {
	f := memory.AuditFilter{Session: r.FormValue("session"), Limit: 200}
	if s := r.FormValue("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			writeJSON(w, nil, badRequest("limit %q is not a count", s))
			return
		}
		f.Limit = n
	}
	if s := r.FormValue("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			writeJSON(w, nil, badRequest("since %q is not an RFC 3339 time", s))
			return
		}
		f.Since = t
	}
	recs, err := d.store.ListAudit(r.Context(), f)
	writeJSON(w, recs, err)
}

func (d *Daemon) servePrompt(w http.ResponseWriter, r *http.Request) {
	v, err := BuildPrompt(r.Context(), d.Agent(), d.personas, r.FormValue("target"), r.FormValue("sender"), r.FormValue("text"))
	writeJSON(w, v, err)
}

func (d *Daemon) serveAsk(w http.ResponseWriter, r *http.Request) {
	if !parseQuestionForm(w, r) {
		return
	}
	req := AskRequest{Session: r.FormValue("session"), Persona: r.FormValue("persona"), Text: r.FormValue("text"),
		NoTools: r.FormValue("no_tools") == "1", New: r.FormValue("new") == "1"}
	answer, err := Ask(r.Context(), d.Agent(), d.store, d.personas, req)
	writeJSON(w, map[string]string{"answer": answer}, err)
}

// ChatEvent is one line of /admin/chat's answer (newline-delimited JSON).
type ChatEvent struct {
	Delta string `json:"delta,omitempty"` // streamed answer text
	Reset bool   `json:"reset,omitempty"` // the streamed text was not the answer
	Text  string `json:"text,omitempty"`  // a message: the answer, a command's reply
	Done  bool   `json:"done,omitempty"`  // everything for this line was sent
	Error string `json:"error,omitempty"`
}

// chatListener collects what the console would print in one chat; the
// console calls it under its lock, so it only appends (bounded).
type chatListener struct {
	mu     sync.Mutex
	events []ChatEvent
	size   int
	wake   chan struct{}
}

const maxChatBuffer = 4 << 20

func (l *chatListener) add(ev ChatEvent) {
	l.mu.Lock()
	if n := len(ev.Delta) + len(ev.Text); ev.Text != "" || l.size+n <= maxChatBuffer {
		l.events = append(l.events, ev)
		l.size += n
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *chatListener) Delta(text string) { l.add(ChatEvent{Delta: text}) }
func (l *chatListener) Reset()            { l.add(ChatEvent{Reset: true}) }
func (l *chatListener) Text(text string)  { l.add(ChatEvent{Text: text}) }

func (l *chatListener) take() []ChatEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events, l.size = nil, 0
	return out
}

// chatPoll is how often serveChat checks whether the chat's turn ended.
const chatPoll = 20 * time.Millisecond

// serveChat sends one line into a console chat of the running daemon (chat
// "local" by default: the conversation `switchboard chat` keeps) and streams
// back, as newline-delimited ChatEvents, what the console shows until the
// line is handled. A client that goes away mid-answer (Ctrl-C) stops the
// turn like /stop: it is not answered later.
func (d *Daemon) serveChat(w http.ResponseWriter, r *http.Request) {
	if !parseQuestionForm(w, r) {
		return
	}
	text := strings.TrimSpace(r.FormValue("text"))
	chat := r.FormValue("chat")
	if chat == "" {
		chat = console.ChatID
	}
	switch {
	case text == "":
		writeJSON(w, nil, badRequest("empty line"))
		return
	case len(text) > maxAskBytes:
		writeJSON(w, nil, badRequest("the line is %d bytes; at most %d", len(text), maxAskBytes))
		return
	case len(chat) > 64 || strings.ContainsAny(chat, ": \t\r\n"):
		writeJSON(w, nil, badRequest("chat %q is not a console chat id", chat))
		return
	}
	term := d.consoleTerminal()
	l := &chatListener{wake: make(chan struct{}, 1)}
	detach := term.Attach(chat, l)
	defer detach()
	if err := term.Chat(r.Context(), d.handler, chat, "", text); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, hub.ErrClosed) || errors.Is(err, hub.ErrBusy) {
			code = http.StatusServiceUnavailable
		}
		http.Error(w, err.Error(), code)
		return
	}
	key := channels.Target{Channel: console.Name, ChatID: chat}.String()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flush := func() {
		for _, ev := range l.take() {
			_ = enc.Encode(ev)
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	tick := time.NewTicker(chatPoll)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			if d.handler.Busy(key) { // the client left mid-answer: stop it like /stop
				detach()
				_ = term.Chat(context.WithoutCancel(r.Context()), d.handler, chat, "", "/stop")
			}
			return
		case <-l.wake:
			flush()
		case <-tick.C:
			if !d.handler.Busy(key) {
				flush()
				_ = enc.Encode(ChatEvent{Done: true})
				flush()
				return
			}
		}
	}
}
