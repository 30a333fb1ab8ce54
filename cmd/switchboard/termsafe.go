package main

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// termSafe writes to w with the control characters a terminal acts on made
// visible: ESC and the other C0 controls but tab and newline as ^[ and the
// like, DEL as ^?, the C1 controls as \u009b, and bytes that are not UTF-8
// as \x9b. The listings (pairing requests, sessions, the audit log, jobs,
// status) show names, messages and errors that strangers and models wrote;
// an escape sequence in them must not clear the operator's screen, retitle
// the terminal or set its clipboard (OSC 52), and a carriage return must not
// write over what the line says.
type termSafe struct{ w io.Writer }

func (t termSafe) Write(p []byte) (int, error) {
	clean := true
	for _, c := range p {
		if c < 0x20 && c != '\n' && c != '\t' || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return t.w.Write(p)
	}
	out := make([]byte, 0, len(p)+16)
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == '\n' || r == '\t':
			out = append(out, byte(r))
		case r < 0x20:
			out = append(out, '^', byte(r)+'@')
		case r == 0x7f:
			out = append(out, '^', '?')
		case r == utf8.RuneError && size == 1:
			out = fmt.Appendf(out, `\x%02x`, p[i])
		case r >= 0x80 && r <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// listOut is stdout for the commands that list stored text (termSafe).
func (a *app) listOut() io.Writer { return termSafe{a.stdout} }
