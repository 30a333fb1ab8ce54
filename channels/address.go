package channels

import (
	"fmt"
	"slices"
	"strings"
)

// CheckTarget accepts a target address "<channel>:<chat_id>[:<thread_id>]"
// (a server-qualified chat id such as "!abc:example.org" may hold ':', see
// ParseTarget) whose channel is one of known: the platform names of the registry
// (channels/platform), which the caller passes in, since this package lists
// no platforms of its own. With known empty only the syntax is checked.
func CheckTarget(s string, known []string) error {
	parts := splitAddress(s)
	bad := len(parts) < 2 || parts[0] == "" || parts[1] == "" || parts[1] == "user" ||
		(len(parts) == 3 && parts[2] == "") || strings.ContainsAny(s, " \t\r\n")
	if bad {
		return fmt.Errorf("%q is not a target: write <channel>:<chat_id>[:<thread_id>], e.g. telegram:12345 or slack:C0123:1700000000.000100", clipForError(s, 60))
	}
	if len(known) > 0 && !slices.Contains(known, parts[0]) {
		return fmt.Errorf("%q: unknown channel %q (one of %s)", clipForError(s, 60), clipForError(parts[0], 30), strings.Join(known, ", "))
	}
	return nil
}

// CheckUserID accepts a user id "<channel>:user:<id>" whose channel is one
// of known (as CheckTarget).
func CheckUserID(s string, known []string) error {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] != "user" || parts[2] == "" || strings.ContainsAny(s, " \t\r\n") ||
		(len(known) > 0 && !slices.Contains(known, parts[0])) {
		return fmt.Errorf("%q is not a user id: write <channel>:user:<id>, e.g. telegram:user:42", clipForError(s, 60))
	}
	return nil
}

// clipForError shortens s to n runes for an error message, marking the cut.
func clipForError(s string, n int) string {
	r := []rune(s)
	if len(s) <= n || len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
