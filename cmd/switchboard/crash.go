package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/internal/redact"
)

// The last-resort handler (execute in main.go): no command shows an operator
// a Go crash. A panic on the goroutine that runs a command, or a memory fault
// there (a read of a damaged memory-mapped file, which the runtime otherwise
// reports as "fatal error: fault" with every goroutine's trace), becomes one
// line on stderr and exit 1. Code that reads a mapped file turns its faults
// into errors naming the file itself (memory/bolt); this only catches what
// slipped through, so the line calls it an internal error and says how to
// get the trace.
//
// SWITCHBOARD_TRACEBACK=1 turns the handler off: a panic then crashes the
// process as Go does, with the goroutine trace (exit 2), for developers.
// Panics on other goroutines (the daemon's workers) are not caught here.
const tracebackEnv = "SWITCHBOARD_TRACEBACK"

// maxPanicText bounds the panic's text on the line, in bytes.
const maxPanicText = 300

// crashed prints the line for the recovered panic r on w and returns the
// exit code.
func crashed(w io.Writer, r any) int {
	fmt.Fprintf(termSafe{w}, "switchboard: internal error: %s (a bug: run again with %s=1 for the trace, and report it)\n",
		panicText(r), tracebackEnv)
	return exitFailure
}

// panicText is r's text on one line, URLs' secrets hidden (redact.Text),
// clipped to maxPanicText.
func panicText(r any) string {
	s := redact.Text(strings.Join(strings.Fields(fmt.Sprint(r)), " "))
	if len(s) <= maxPanicText {
		return s
	}
	cut := maxPanicText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
