package channels

import (
	"fmt"
	"slices"
	"strings"
)

// Names are the channels a target address or user id may start with. It is
// the one list config validation and the job scheduler check addresses
// against.
var Names = []string{"console", "telegram", "slack", "discord", "web"}

// CheckTarget accepts a target address "<channel>:<chat_id>[:<thread_id>]"
// whose channel is one of Names.
func CheckTarget(s string) error {
	parts := strings.SplitN(s, ":", 3)
	bad := len(parts) < 2 || parts[1] == "" || parts[1] == "user" ||
		(len(parts) == 3 && parts[2] == "") || strings.ContainsAny(s, " \t\r\n")
	if bad {
		return fmt.Errorf("%q is not a target: write <channel>:<chat_id>[:<thread_id>], e.g. telegram:12345 or slack:C0123:1700000000.000100", clipForError(s, 60))
	}
	if !slices.Contains(Names, parts[0]) {
		return fmt.Errorf("%q: unknown channel %q (one of %s)", clipForError(s, 60), clipForError(parts[0], 30), strings.Join(Names, ", "))
	}
	return nil
}

// CheckUserID accepts a user id "<channel>:user:<id>" whose channel is one
// of Names.
func CheckUserID(s string) error {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 || parts[1] != "user" || parts[2] == "" || strings.ContainsAny(s, " \t\r\n") ||
		!slices.Contains(Names, parts[0]) {
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
