package ui

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/switchboard-bot/switchboard/memory"
)

// Operator is the sender id of messages typed in the console's chat (its
// user key is "web:user:operator"); pages name it You.
const Operator = "operator"

// You is how the chat names the operator's own messages, everywhere.
const You = "you"

// maxChatText bounds one chat message from the console.
const maxChatText = 64 << 10

// convRe and maxConv are the rule of a web conversation id (the length apart:
// {1,64} compiles to a ~20 KB program kept for the process's life).
var convRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

const maxConv = 64

func validConv(conv string) bool { return len(conv) <= maxConv && convRe.MatchString(conv) }

type chatData struct {
	Off      bool
	Conv     string
	Convs    []memory.SessionMeta
	Personas []string
	Persona  string
	Chosen   bool
	// Entries is the conversation, oldest first: the stored turns, with
	// the messages sent while each ran (an approval request, the
	// operator's /approve) inside it, and the messages outside any stored
	// turn (commands and their answers, the operator's message whose turn
	// is not stored yet) between them (chatlog.go).
	Entries []chatEntry
	Live    chatLive // the running turn: typing, and the drafts it is writing
	// MaxUpload is media.max_upload, checked by the page's script before an
	// upload (upload.go checks it again).
	MaxUpload int64
}

func newConv() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// webSessions lists the console's chat sessions, newest first.
func (s *Server) webSessions(r *http.Request) ([]memory.SessionMeta, error) {
	list, err := s.o.Backend.Store().ListSessions(r.Context())
	if err != nil {
		return nil, err
	}
	var out []memory.SessionMeta
	for _, m := range list {
		if strings.HasPrefix(m.Key, WebChannel+":") {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	return out, nil
}

func (s *Server) chatPage(w http.ResponseWriter, r *http.Request) {
	if s.o.Chat == nil {
		s.render(w, r, http.StatusOK, "chat", chatData{Off: true})
		return
	}
	conv := r.FormValue("conv")
	convs, err := s.webSessions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if conv == "" {
		conv = newConv()
		if len(convs) > 0 {
			conv = strings.TrimPrefix(convs[0].Key, WebChannel+":")
		}
		http.Redirect(w, r, "/ui/chat?conv="+url.QueryEscape(conv), http.StatusSeeOther)
		return
	}
	if !validConv(conv) {
		s.notFound(w, r, "Not a chat id: use letters, digits, - and _.")
		return
	}
	d, err := s.chatData(r, conv, csrfOf(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Convs = convs
	d.MaxUpload = s.maxUpload()
	s.render(w, r, http.StatusOK, "chat", d)
}

// chatData is the conversation conv: its turns from the store, the other
// messages of the web channel (the operator's and the bot's), the turn
// running now, and the call waiting for approval, if any. csrf is the
// session's token, for the approval card's forms.
func (s *Server) chatData(r *http.Request, conv, csrf string) (chatData, error) {
	key := webTarget(conv).String()
	st := s.o.Backend.Store()
	d := chatData{Conv: conv, Personas: s.o.Backend.Personas().Names()}
	meta, ok, err := st.Session(r.Context(), key)
	if err != nil {
		return d, err
	}
	d.Persona, d.Chosen = meta.Persona, meta.Persona != ""
	if d.Persona == "" {
		d.Persona = s.o.Backend.Personas().Resolve(r.Context(), webTarget(conv))
	}
	var turns []memory.Turn
	if ok {
		if turns, err = st.SessionTurns(r.Context(), key); err != nil {
			return d, err
		}
	}
	d.Live.Typing = s.o.Chat.Typing(conv)
	d.Entries, d.Live = s.chatLog(conv, turns, d.Live, csrf)
	return d, nil
}

// finalTexts folds a conversation's history into its messages as last
// edited, in the order they were first sent.
func finalTexts(evs []ChatEvent) []ChatEvent {
	var out []ChatEvent
	at := map[string]int{}
	for _, ev := range evs {
		switch ev.Kind {
		case "message":
			if ev.ID != "" {
				at[ev.ID] = len(out)
			}
			out = append(out, ev)
		case "edit":
			if i, ok := at[ev.ID]; ok {
				out[i].Text = ev.Text
			}
		}
	}
	return out
}

// answered reports whether text is (part of) a stored turn's answer.
func answered(turns []memory.Turn, text string) bool {
	text = strings.TrimSpace(text)
	return text != "" && slices.ContainsFunc(turns, func(t memory.Turn) bool { return strings.Contains(t.Answer, text) })
}

func (s *Server) chatNew(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/ui/chat?conv="+newConv(), http.StatusSeeOther)
}

// wantsJSON reports a request sent by app.js (it answers without a page).
func wantsJSON(r *http.Request) bool { return r.Header.Get("X-CSRF-Token") != "" }

func (s *Server) chatSend(w http.ResponseWriter, r *http.Request) {
	conv, text := r.PostFormValue("conv"), strings.TrimSpace(r.PostFormValue("text"))
	back := "/ui/chat?conv=" + url.QueryEscape(conv)
	var err error
	switch {
	case s.o.Chat == nil:
		err = errors.New("the web channel is off (channels.web.enabled)")
	case !validConv(conv):
		err = errors.New("not a chat id")
	case text == "":
		err = errors.New("nothing to send")
	case len(text) > maxChatText:
		err = errors.New("the message is too long")
	default:
		_, err = s.o.Chat.Post(r.Context(), conv, Operator, text)
	}
	if wantsJSON(r) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err != nil {
		s.redirect(w, r, back, "Not sent: "+err.Error())
		return
	}
	s.redirect(w, r, back, "")
}

func (s *Server) chatPersona(w http.ResponseWriter, r *http.Request) {
	conv, name := r.PostFormValue("conv"), r.PostFormValue("persona")
	back := "/ui/chat?conv=" + url.QueryEscape(conv)
	if !validConv(conv) {
		s.notFound(w, r, "Not a chat id.")
		return
	}
	res := s.o.Backend.Personas()
	var err error
	switch {
	case name == "":
		err = res.Clear(r.Context(), webTarget(conv))
	case !slices.Contains(res.Names(), name):
		err = errors.New("no persona " + name)
	default:
		err = res.Choose(r.Context(), webTarget(conv), name)
	}
	if err != nil {
		s.redirect(w, r, back, "Persona not changed: "+err.Error())
		return
	}
	s.audit(r.Context(), "persona.choose", webTarget(conv).String(), name, "")
	s.redirect(w, r, back, "")
}
