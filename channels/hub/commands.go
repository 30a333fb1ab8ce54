package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
)

// commandName returns the command of text ("/reset@mybot now" → "reset"),
// or "" when text is not a command.
func commandName(text string) string {
	text = strings.TrimSpace(text)
	if len(text) < 2 || text[0] != '/' {
		return ""
	}
	word := strings.Fields(text)[0][1:]
	if i := strings.IndexByte(word, '@'); i >= 0 {
		word = word[:i]
	}
	word = strings.ToLower(word)
	for _, r := range word {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return "" // "/usr/bin is a path" is not a command
		}
	}
	return word
}

func commandArgs(text string) []string {
	f := strings.Fields(strings.TrimSpace(text))
	if len(f) <= 1 {
		return nil
	}
	return f[1:]
}

const helpText = `Commands:
/help — this list
/reset — start a fresh conversation (the old one is archived)
/stop — stop the answer in progress
/tasks — this chat's background tasks
/stop ID — stop a background task ("/stop t7")
/approve, /deny — decide a tool call waiting for approval
/persona [NAME] — show or choose who answers in this chat
/usage — this chat's tokens today and this week, and its budget
/files — this chat's workspace files and their bounds
/status — bot status (admins)
/reload — re-read config.yaml and personas (admins)
/jobs — scheduled jobs and their next runs (admins)
/heartbeat on|off — proactive greetings (admins)
/pair CODE — approve a pairing code (admins)`

// command answers a command without the model.
func (h *Handler) command(s *session, it item) {
	msg := it.msg
	name := commandName(msg.Text)
	args := commandArgs(msg.Text)
	pol := h.Access()
	admin := pol.IsAdmin(&msg)
	ctx := h.baseCtx
	key := msg.Target().String()
	switch name {
	case "help", "start":
		h.reply(it, helpText)
	case "reset":
		if err := h.store.ResetSession(ctx, key); err != nil {
			h.log.Error("reset session", "session", key, "err", err)
			h.reply(it, "Sorry, I could not reset this conversation. The operator can find the cause in the log.")
			return
		}
		h.reply(it, "Started a fresh conversation. (The previous one is archived.)")
	case "stop":
		if len(args) > 0 {
			h.stopTaskCommand(ctx, it, key, args)
			return
		}
		h.mu.Lock()
		stopped := s.stopped
		s.stopped = false
		h.mu.Unlock()
		if stopped {
			h.reply(it, "Stopped.")
		} else {
			h.reply(it, "Nothing to stop.")
		}
	case "approve", "deny":
		h.approvalCommand(it) // replayed after a restart: nothing waits any more
	case "persona":
		h.personaCommand(ctx, it, args, admin)
	case "usage":
		h.usageCommand(ctx, it, key, admin)
	case "tasks":
		h.tasksCommand(ctx, it, key)
	case "files":
		h.filesCommand(ctx, it, key)
	case "status", "pair", "jobs", "reload", "heartbeat":
		if h.requireAdmin(it, admin, name) {
			h.adminCommand(ctx, it, name, args)
		}
	default:
		h.reply(it, fmt.Sprintf("Unknown command /%s. Try /help.", name))
	}
}

// adminCommand answers a command for the bot's admins; the caller checked
// that the sender is one.
func (h *Handler) adminCommand(ctx context.Context, it item, name string, args []string) {
	msg := it.msg
	key := msg.Target().String()
	switch name {
	case "status":
		h.audit(msg.UserKey(), "command.status", key, "", "")
		h.reply(it, h.StatusText(ctx))
	case "pair":
		h.pairCommand(ctx, it, args)
	case "jobs":
		h.audit(msg.UserKey(), "command.jobs", key, "", "")
		if h.admin == nil {
			h.reply(it, "No scheduler is running.")
			return
		}
		h.reply(it, h.admin.Jobs(ctx))
	case "reload":
		if h.admin == nil {
			h.reply(it, "Reloading is not available here.")
			return
		}
		text, err := h.admin.Reload(ctx, msg.UserKey())
		if err != nil {
			h.reply(it, "The new configuration was rejected; the running one stays.\n"+err.Error())
			return
		}
		h.reply(it, text)
	case "heartbeat":
		h.heartbeatCommand(ctx, it, args)
	}
}

// pairCommand approves a pairing code (/pair CODE).
func (h *Handler) pairCommand(ctx context.Context, it item, args []string) {
	if len(args) != 1 {
		h.reply(it, "Usage: /pair CODE")
		return
	}
	req, err := h.ApprovePairing(ctx, it.msg.UserKey(), it.msg.Target().String(), args[0])
	if err != nil {
		if errors.Is(err, ErrUnknownCode) {
			h.reply(it, "That code is unknown or expired.")
		} else {
			h.reply(it, "Sorry, approving failed; see the log.")
		}
		return
	}
	h.reply(it, fmt.Sprintf("Approved %s (%s).", req.User, req.Name))
}

func (h *Handler) heartbeatCommand(ctx context.Context, it item, args []string) {
	if h.admin == nil {
		h.reply(it, "No scheduler is running.")
		return
	}
	if len(args) == 0 {
		state := "off"
		if h.admin.HeartbeatEnabled(ctx) {
			state = "on"
		}
		h.reply(it, "Proactive greetings are "+state+". Use /heartbeat on or /heartbeat off.")
		return
	}
	var on bool
	switch strings.ToLower(args[0]) {
	case "on":
		on = true
	case "off":
	default:
		h.reply(it, "Usage: /heartbeat on|off")
		return
	}
	if err := h.admin.SetHeartbeat(ctx, on); err != nil {
		h.log.Error("switch heartbeat", "err", err)
		h.reply(it, "Sorry, that failed; see the log.")
		return
	}
	h.audit(it.msg.UserKey(), "heartbeat.set", it.msg.Target().String(), strings.ToLower(args[0]), "")
	h.reply(it, "Proactive greetings are now "+strings.ToLower(args[0])+".")
}

func (h *Handler) requireAdmin(it item, admin bool, name string) bool {
	if admin {
		return true
	}
	h.audit(it.msg.UserKey(), "command."+name, it.msg.Target().String(), "refused: not an admin", "not allowed")
	h.reply(it, "Sorry, that command is for the bot's admins.")
	return false
}

func (h *Handler) personaCommand(ctx context.Context, it item, args []string, admin bool) {
	if h.personas == nil {
		h.reply(it, "Personas are not configured.")
		return
	}
	target := it.msg.Target()
	names := h.personas.Names()
	if len(args) == 0 {
		cur := h.personas.Resolve(ctx, target)
		var b strings.Builder
		fmt.Fprintf(&b, "Current persona: %s\nAvailable:", cur)
		for _, n := range names {
			b.WriteString("\n• " + n)
		}
		b.WriteString("\nChoose one with /persona NAME.")
		h.reply(it, b.String())
		return
	}
	name := strings.ToLower(args[0])
	if len(args) == 2 { // /persona NAME TARGET (admins): another chat
		if !h.requireAdmin(it, admin, "persona") {
			return
		}
		t, ok := channels.ParseTarget(args[1])
		if !ok {
			h.reply(it, "Usage: /persona NAME [channel:chat_id[:thread_id]]")
			return
		}
		target = t
	}
	if !slices.Contains(names, name) {
		h.reply(it, fmt.Sprintf("There is no persona %q. Available: %s.", name, strings.Join(names, ", ")))
		return
	}
	if err := h.personas.Choose(ctx, target, name); err != nil {
		h.log.Error("choose persona", "target", target.String(), "err", err)
		h.reply(it, "Sorry, I could not change the persona: "+err.Error())
		return
	}
	h.audit(it.msg.UserKey(), "persona.choose", target.String(), name, "")
	h.reply(it, fmt.Sprintf("Persona for %s is now %s. The conversation history is kept.", target, name))
}

// StatusText is the text of /status: the daemon's facts, then message, turn and delivery counters.
func (h *Handler) StatusText(ctx context.Context) string {
	st := h.Stats()
	o := h.out.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "%s status\n", h.botName)
	if h.admin != nil {
		b.WriteString(h.admin.Status(ctx))
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "messages: %d received, %d duplicates dropped, %d ignored, %d denied\n", st.Received, st.Duplicates, st.Ignored, st.Denied)
	fmt.Fprintf(&b, "turns: %d (%d failed); active sessions: %d; queued messages: %d\n", st.Turns, st.TurnErrors, st.ActiveSessions, st.QueueDepth)
	fmt.Fprintf(&b, "deliveries: %d sent, %d edited, %d retried, %d failed, %d resent after restart", o.Sent, o.Edited, o.Retried, o.Failed, o.Resent)
	if o.LastFailure != "" {
		fmt.Fprintf(&b, "\nlast failed delivery: %s", o.LastFailure)
	}
	return b.String()
}

// ApprovePairing approves code on behalf of actor (an admin's user key, or
// "cli"), audits the decision and tells the paired user.
func (h *Handler) ApprovePairing(ctx context.Context, actor, session, code string) (PairingRequest, error) {
	req, err := h.pairing.Approve(ctx, code)
	if err != nil {
		h.audit(actor, "pairing.approve", session, "code "+strings.ToUpper(strings.TrimSpace(code)), err.Error())
		return req, err
	}
	h.audit(actor, "pairing.approve", session, "approved "+req.User, "")
	if t, ok := channels.ParseTarget(req.Target); ok {
		if _, err := h.Deliver(ctx, t, "", "You're approved — say hello!"); err != nil {
			h.log.Warn("tell paired user", "target", req.Target, "err", err)
		}
	}
	return req, nil
}
