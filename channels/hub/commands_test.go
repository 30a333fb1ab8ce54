package hub

import "testing"

// Moved from channels/access_test.go with the command parser.
func TestCommandName(t *testing.T) {
	for in, want := range map[string]string{
		"/reset":             "reset",
		"/Reset@my_bot now":  "reset",
		"  /stop ":           "stop",
		"/usr/bin is a path": "",
		"hello /reset":       "",
		"/":                  "",
	} {
		if got := commandName(in); got != want {
			t.Errorf("commandName(%q) = %q, want %q", in, got, want)
		}
	}
}
