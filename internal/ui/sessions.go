package ui

import (
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

// maxListed bounds the sessions the list shows.
const maxListed = 500

type sessionsData struct {
	Query    string
	Sessions []memory.SessionMeta
	Total    int
	More     bool
}

func (s *Server) sessionsPage(w http.ResponseWriter, r *http.Request) {
	list, err := s.o.Backend.Store().ListSessions(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := strings.TrimSpace(r.FormValue("q"))
	d := sessionsData{Query: q}
	sort.Slice(list, func(i, j int) bool { return list[i].Updated.After(list[j].Updated) })
	for _, m := range list {
		if q != "" && !strings.Contains(strings.ToLower(m.Key+" "+m.Persona), strings.ToLower(q)) {
			continue
		}
		d.Total++
		if len(d.Sessions) < maxListed {
			d.Sessions = append(d.Sessions, m)
		}
	}
	d.More = d.Total > len(d.Sessions)
	s.render(w, r, http.StatusOK, "sessions", d)
}

type sessionData struct {
	Meta    memory.SessionMeta
	Persona string // in force: the chosen one or the configured one
	Chosen  bool
	Notes   []memory.Note
	Turns   []turnView
	Hidden  int // older turns not shown
	Pending string
	Files   filesData // the chat's workspace (files.go)
}

func (s *Server) sessionShow(w http.ResponseWriter, r *http.Request) {
	key := r.FormValue("key")
	st := s.o.Backend.Store()
	meta, ok, err := st.Session(r.Context(), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok {
		s.notFound(w, r, "No session "+key+".")
		return
	}
	turns, err := st.SessionTurns(r.Context(), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	notes, err := st.ListNotes(r.Context(), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := sessionData{Meta: meta, Notes: notes, Turns: turnViews(turns, s.o.Stats), Persona: meta.Persona, Chosen: meta.Persona != ""}
	d.Hidden = len(turns) - len(d.Turns)
	s.addStoreSpans(r.Context(), key, d.Turns) // approval waits and deliveries in the waterfalls
	d.Files = s.sessionFiles(r.Context(), key)
	if t, ok := channels.ParseTarget(key); ok && d.Persona == "" {
		d.Persona = s.o.Backend.Personas().Resolve(r.Context(), t)
	}
	for _, a := range s.o.Backend.Approvals() {
		if a.Session == key {
			d.Pending = a.Tool
		}
	}
	s.render(w, r, http.StatusOK, "session", d)
}

func (s *Server) sessionExport(w http.ResponseWriter, r *http.Request) {
	key := r.FormValue("key")
	st := s.o.Backend.Store()
	if _, ok, err := st.Session(r.Context(), key); err != nil || !ok {
		s.notFound(w, r, "No session "+key+".")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="`+exportName(key)+`"`)
	if err := st.ExportSession(r.Context(), key, w); err != nil {
		s.log.Error("export session", "session", key, "err", err)
	}
	s.audit(r.Context(), "session.export", key, "", "")
}

// exportName is a file name for a session export (only safe characters).
func exportName(key string) string {
	b := []byte("session-" + key + ".json")
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

func (s *Server) sessionReset(w http.ResponseWriter, r *http.Request) {
	key := r.PostFormValue("key")
	back := "/ui/sessions/show?key=" + url.QueryEscape(key)
	if err := s.o.Backend.ResetSession(r.Context(), key, Actor); err != nil {
		s.redirect(w, r, back, "Reset refused: "+err.Error())
		return
	}
	s.redirect(w, r, back, "Reset "+key+": the previous conversation is archived.")
}

// fail answers an unexpected error without its details (they are logged).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("console request", "path", r.URL.Path, "err", err)
	s.render(w, r, http.StatusInternalServerError, "message", messageData{Title: "Something went wrong", Text: "The request failed; the daemon's log has the details."})
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request, text string) {
	s.render(w, r, http.StatusNotFound, "message", messageData{Title: "Not found", Text: text})
}

type messageData struct{ Title, Text string }

// errText is an error's text for a page (never a secret: the errors shown
// come from validation, which never includes one).
func errText(err error) string {
	if err == nil {
		return ""
	}
	var list interface{ Unwrap() []error }
	if errors.As(err, &list) {
		var parts []string
		for _, e := range list.Unwrap() {
			parts = append(parts, e.Error())
		}
		return strings.Join(parts, "\n")
	}
	return err.Error()
}
