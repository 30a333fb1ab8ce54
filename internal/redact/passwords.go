package redact

import (
	"net/url"
	"slices"
	"strings"
)

// minPiece is the shortest part of a split password Passwords returns on
// its own: shorter ones are too common to replace in a message safely.
const minPiece = 4

// Passwords returns the texts that belong to the password of raw, a URL
// ("postgres://user:password@host/db") or a key=value DSN ("password=…"),
// for Error to hide in a driver's message: the password as written, its
// percent-decoded form, and, when an unencoded '@', '/', ':', '?' or '#'
// splits it, each piece between them (a driver that reads
// "postgres://sb:PG@SECRET9@host/db" takes "SECRET9@host" for the host and
// prints it). nil when raw holds no password.
func Passwords(raw string) []string {
	var out []string
	add := func(s string, whole bool) {
		if s == "" || (!whole && len(s) < minPiece) || slices.Contains(out, s) {
			return
		}
		out = append(out, s)
	}
	var pws []string
	if scheme, rest, ok := strings.Cut(raw, "://"); ok && scheme != "" && !strings.ContainsAny(scheme, " =") {
		if _, pw, has := strings.Cut(userinfo(rest), ":"); has {
			pws = append(pws, pw)
		}
	} else {
		pws = dsnPasswords(raw)
	}
	for _, pw := range pws {
		add(pw, true)
		if dec, err := url.PathUnescape(pw); err == nil {
			add(dec, true)
		}
		for _, p := range strings.FieldsFunc(pw, func(r rune) bool { return strings.ContainsRune("@/:?#", r) }) {
			add(p, false)
		}
	}
	return out
}

// userinfo is the user info of rest, a URL after its "://": the text
// before the last '@' of the authority, or, when a delimiter written
// unencoded in the password ends the authority early, before the last '@'
// of rest.
func userinfo(rest string) string {
	auth := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth = rest[:i]
	}
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		return auth[:at]
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		return rest[:at]
	}
	return ""
}

// dsnPasswords returns the values of the password keys of a key=value DSN
// (a value in single quotes may hold spaces and \' escapes).
func dsnPasswords(dsn string) []string {
	var out []string
	lower := strings.ToLower(dsn)
	for from := 0; ; {
		i := strings.Index(lower[from:], "password")
		if i < 0 {
			return out
		}
		i += from
		from = i + len("password")
		if i > 0 && dsn[i-1] != ' ' && dsn[i-1] != '\t' {
			continue
		}
		rest := strings.TrimLeft(dsn[from:], " \t")
		if !strings.HasPrefix(rest, "=") {
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		if strings.HasPrefix(rest, "'") {
			var b strings.Builder
			for j := 1; j < len(rest) && rest[j] != '\''; j++ {
				if rest[j] == '\\' && j+1 < len(rest) {
					j++
				}
				b.WriteByte(rest[j])
			}
			out = append(out, b.String())
			continue
		}
		if j := strings.IndexAny(rest, " \t"); j >= 0 {
			rest = rest[:j]
		}
		out = append(out, rest)
	}
}
