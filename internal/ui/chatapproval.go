package ui

import (
	"errors"
	"net/http"
	"net/url"
)

// The approval card's buttons (issue 34, item 1). A click is the operator
// typing /approve or /deny in that chat: the route posts the command
// through the web channel, so the hub's one set of rules decides it (only
// the call waiting in that chat, only its requester or an admin, the
// timeout, the audit records approval.approve / approval.deny / refused) and
// the chat shows the command and the hub's answer. What the route adds is
// that a card decides only its own call: the form sends back the waiting
// call's description (the hub's Detail), and when another call waits now, or
// none, the click is refused instead of deciding something the operator did
// not see. Like every POST it needs the session's CSRF token.

// errNotWaiting and errOtherCall are the refusals of a card's click.
var (
	errNotWaiting = errors.New("nothing is waiting for approval in this chat any more (it was decided, or refused after its timeout)")
	errOtherCall  = errors.New("the call on this card is no longer the one waiting in this chat; decide the one shown now")
)

func (s *Server) chatApproval(w http.ResponseWriter, r *http.Request) {
	conv, decision, detail := r.PostFormValue("conv"), r.PostFormValue("decision"), r.PostFormValue("detail")
	back := "/ui/chat?conv=" + url.QueryEscape(conv)
	if decision != "approve" && decision != "deny" {
		http.Error(w, "refused: the decision is approve or deny", http.StatusBadRequest)
		return
	}
	code, err := http.StatusConflict, error(nil)
	switch waiting, ok := s.waitingApproval(conv); {
	case s.o.Chat == nil:
		code, err = http.StatusNotFound, errors.New("the web channel is off (channels.web.enabled)")
	case !validConv(conv):
		code, err = http.StatusBadRequest, errors.New("not a chat id")
	case !ok:
		err = errNotWaiting
	case waiting.Detail != detail:
		err = errOtherCall
	default:
		code = http.StatusNoContent
		if _, perr := s.o.Chat.Post(r.Context(), conv, Operator, "/"+decision); perr != nil {
			code, err = http.StatusServiceUnavailable, perr
		}
	}
	if wantsJSON(r) {
		if err != nil {
			http.Error(w, "Not decided: "+err.Error(), code)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err != nil {
		s.redirect(w, r, back, "Not decided: "+err.Error())
		return
	}
	s.redirect(w, r, back, "Sent /"+decision+" to the chat.")
}
