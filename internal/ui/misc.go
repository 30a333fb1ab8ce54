package ui

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/memory"
)

// Pairing, audit and approvals pages.

func (s *Server) pairingPage(w http.ResponseWriter, r *http.Request) {
	reqs, err := s.o.Backend.PendingPairings(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "pairing", reqs)
}

func (s *Server) pairingDecide(w http.ResponseWriter, r *http.Request) {
	code := r.PostFormValue("code")
	var req hub.PairingRequest
	var err error
	verb := "Approved"
	switch r.PathValue("decision") {
	case "approve":
		req, err = s.o.Backend.ApprovePairing(r.Context(), Actor, code)
	case "deny":
		verb = "Denied"
		req, err = s.o.Backend.DenyPairing(r.Context(), Actor, code)
	default:
		http.NotFound(w, r)
		return
	}
	switch {
	case errors.Is(err, hub.ErrUnknownCode):
		s.redirect(w, r, "/ui/pairing", "No pending code "+strings.ToUpper(strings.TrimSpace(code))+" (used or expired).")
	case err != nil:
		s.log.Error("pairing decision", "err", err)
		s.redirect(w, r, "/ui/pairing", "The decision could not be saved; see the daemon's log.")
	default:
		who := req.User
		if req.Name != "" {
			who = req.Name + " (" + req.User + ")"
		}
		s.redirect(w, r, "/ui/pairing", verb+" "+who+".")
	}
}

type auditData struct {
	Session, Kind, Since string
	Records              []memory.AuditRecord
	More                 bool
}

// auditShown bounds the records the audit page lists; auditScan bounds how
// many it reads to filter by kind.
const (
	auditShown = 200
	auditScan  = 5000
)

// auditSince maps the page's period choices to durations.
var auditSince = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour}

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) {
	d := auditData{Session: strings.TrimSpace(r.FormValue("session")), Kind: strings.TrimSpace(r.FormValue("kind")), Since: r.FormValue("since")}
	f := memory.AuditFilter{Session: d.Session, Limit: auditShown + 1}
	if d.Kind != "" {
		f.Limit = auditScan
	}
	if p, ok := auditSince[d.Since]; ok {
		f.Since = s.o.Now().Add(-p)
	} else {
		d.Since = ""
	}
	recs, err := s.o.Backend.Store().ListAudit(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, rec := range recs {
		if d.Kind != "" && rec.Action != d.Kind && !strings.HasPrefix(rec.Action, d.Kind+".") {
			continue
		}
		if len(d.Records) == auditShown {
			d.More = true
			break
		}
		d.Records = append(d.Records, rec)
	}
	s.render(w, r, http.StatusOK, "audit", d)
}

func (s *Server) approvalsPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "approvals", s.o.Backend.Approvals())
}

func (s *Server) approvalDecide(w http.ResponseWriter, r *http.Request) {
	session := r.PostFormValue("session")
	var approve bool
	switch r.PathValue("decision") {
	case "approve":
		approve = true
	case "deny":
	default:
		http.NotFound(w, r)
		return
	}
	if err := s.o.Backend.DecideApproval(r.Context(), session, approve, Actor); err != nil {
		s.redirect(w, r, "/ui/approvals", "Not decided: "+err.Error())
		return
	}
	verb := "Denied"
	if approve {
		verb = "Approved"
	}
	s.redirect(w, r, "/ui/approvals", verb+" the call waiting in "+session+".")
}
