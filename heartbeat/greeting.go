package heartbeat

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/memory"
)

// greetingInput is what the greeting instruction is built from.
type greetingInput struct {
	Target   string
	UserName string
	Now      time.Time // in the target's zone
	LastUser time.Time // zero: never wrote
	Hints    string
	Notes    []memory.Note
	History  []memory.Message
}

// maxHistoryInInstruction bounds the recent messages quoted to the model.
const maxHistoryInInstruction = 8

// buildInstruction writes the greeting instruction for one chat.
func buildInstruction(in greetingInput) string {
	var b strings.Builder
	b.WriteString("[heartbeat] This is not a message from the user. You may send a short, friendly, proactive message to this chat on your own initiative.\n\n")
	if in.UserName != "" {
		fmt.Fprintf(&b, "The person: %s.\n", oneLine(in.UserName, 80))
	}
	fmt.Fprintf(&b, "Their local time: %s, %s (%s).\n", in.Now.Format("Monday 15:04"), timeOfDay(in.Now), in.Now.Location())
	if in.LastUser.IsZero() {
		b.WriteString("They have not written in this chat yet.\n")
	} else {
		fmt.Fprintf(&b, "They last wrote %s ago.\n", humanDuration(in.Now.Sub(in.LastUser)))
	}
	if h := strings.TrimSpace(in.Hints); h != "" {
		fmt.Fprintf(&b, "\nHow to greet (persona hints):\n%s\n", h)
	}
	if len(in.Notes) > 0 {
		b.WriteString("\nNotes about this chat:\n")
		for _, n := range in.Notes {
			fmt.Fprintf(&b, "- %s\n", oneLine(n.Text, 300))
		}
	}
	var hist []string
	for _, m := range in.History {
		if (m.Role != memory.RoleUser && m.Role != memory.RoleAssistant) || strings.TrimSpace(m.Content) == "" {
			continue
		}
		who := "you"
		if m.Role == memory.RoleUser {
			who = "user"
			if m.Name != "" {
				who = "user (" + oneLine(m.Name, 40) + ")"
			}
		}
		hist = append(hist, fmt.Sprintf("- %s: %s", who, oneLine(m.Content, 300)))
	}
	if len(hist) > maxHistoryInInstruction {
		hist = hist[len(hist)-maxHistoryInInstruction:]
	}
	if len(hist) > 0 {
		b.WriteString("\nThe end of the conversation so far:\n")
		b.WriteString(strings.Join(hist, "\n"))
		b.WriteString("\n")
	}
	b.WriteString("\nWrite one or two sentences that fit the time of day and what you know; do not mention this instruction, " +
		"do not say that you were scheduled, do not repeat an earlier greeting. If a message now would be unwelcome or pointless, skip.\n" +
		"Answer with exactly one JSON object and nothing else:\n" +
		`{"action":"greet","message":"<the message to send>"}` + "\nor\n" +
		`{"action":"skip","reason":"<why>"}` + "\n")
	return b.String()
}

func timeOfDay(t time.Time) string {
	switch h := t.Hour(); {
	case h >= 5 && h < 12:
		return "morning"
	case h >= 12 && h < 17:
		return "afternoon"
	case h >= 17 && h < 22:
		return "evening"
	default:
		return "night"
	}
}

// humanDuration renders d coarsely ("about 5 hours", "3 days").
func humanDuration(d time.Duration) string {
	plural := func(n int, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return "about " + plural(int((d+30*time.Minute)/time.Hour), "hour")
	default:
		return plural(int(d/(24*time.Hour)), "day")
	}
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max]) + "…"
	}
	return s
}

// greeting is the parsed answer of the model.
type greeting struct {
	Greet   bool
	Message string
	Reason  string // for a skip
}

var (
	fenceRe = regexp.MustCompile("(?s)```[a-zA-Z0-9_-]*\\s*(.*?)\\s*```")
	// tokenRe matches bare status tokens such as HEARTBEAT_OK, NO_REPLY, SKIP.
	tokenRe = regexp.MustCompile(`^[\[\(<*_"'\x60]*[A-Z][A-Z0-9]*(?:[_ -][A-Z0-9]+)*[\]\)>*_"'\x60.!]*$`)
)

// isStatusToken reports whether s is a bare upper-case status token that must
// never reach a user ("HEARTBEAT_OK", "NO_REPLY", "SKIP", "[SILENT]").
func isStatusToken(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return true
	}
	if strings.Contains(strings.ToUpper(s), "HEARTBEAT_OK") || strings.Contains(s, "NO_REPLY") {
		return true
	}
	return tokenRe.MatchString(s) && (strings.ContainsAny(s, "_") || len(s) <= 8)
}

// parseGreeting reads the model's answer tolerantly: a JSON object (bare, in a
// code fence, or surrounded by prose); without one, the whole text is the
// greeting unless it is empty, looks like JSON, or is a status token.
func parseGreeting(answer string) greeting {
	text := strings.TrimSpace(answer)
	candidates := []string{text}
	for _, m := range fenceRe.FindAllStringSubmatch(text, -1) {
		candidates = append(candidates, m[1])
	}
	if i, j := strings.Index(text, "{"), strings.LastIndex(text, "}"); i >= 0 && j > i {
		candidates = append(candidates, text[i:j+1])
	}
	for _, c := range candidates {
		var v struct {
			Action  string `json:"action"`
			Message string `json:"message"`
			Text    string `json:"text"`
			Reason  string `json:"reason"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(c)), &v); err != nil {
			continue
		}
		msg := strings.TrimSpace(v.Message)
		if msg == "" {
			msg = strings.TrimSpace(v.Text)
		}
		switch strings.ToLower(strings.TrimSpace(v.Action)) {
		case "greet", "send", "message":
			if isStatusToken(msg) {
				return greeting{Reason: "the model's greeting was empty or a status token"}
			}
			return greeting{Greet: true, Message: msg}
		case "skip", "none", "no", "decline":
			r := strings.TrimSpace(v.Reason)
			if r == "" {
				r = "the model declined"
			}
			return greeting{Reason: r}
		default:
			return greeting{Reason: fmt.Sprintf("the model answered an unknown action %q", oneLine(v.Action, 40))}
		}
	}
	if isStatusToken(text) {
		return greeting{Reason: "the model answered with a status token, not a greeting"}
	}
	if looksLikeJSON(text) {
		return greeting{Reason: "the model's answer looked like JSON but did not parse"}
	}
	return greeting{Greet: true, Message: text}
}

func looksLikeJSON(s string) bool {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		return true
	}
	if strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") {
		return true
	}
	return strings.Contains(s, `"action"`) || strings.Contains(s, `"message":`)
}
