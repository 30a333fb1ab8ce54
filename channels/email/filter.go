package email

import (
	"net/mail"
	"strings"
)

// This file decides which mail is never answered (automatic mail, the bot's
// own) and whose sender is trusted (Authentication-Results, RFC 8601).

// automatic returns why a mail is automatic — an auto-reply, a bounce, a
// list's mail, a report — or "" for a person's mail (RFC 3834, RFC 2919,
// RFC 6522).
func automatic(h mail.Header, from string) string {
	if v := headerToken(h.Get("Auto-Submitted")); v != "" && v != "no" {
		return "Auto-Submitted: " + v
	}
	switch p := headerToken(h.Get("Precedence")); p {
	case "bulk", "junk", "list":
		return "Precedence: " + p
	}
	if h.Get("List-Id") != "" {
		return "a mailing list's mail (List-Id)"
	}
	for _, k := range []string{"X-Autoreply", "X-Autorespond"} {
		if h.Get(k) != "" {
			return "an auto-reply (" + k + ")"
		}
	}
	if _, ok := h["Return-Path"]; ok {
		rp := strings.TrimSpace(stripComments(h.Get("Return-Path")))
		if rp == "<>" || rp == "" {
			return "a bounce (empty Return-Path)"
		}
	}
	local, _, _ := strings.Cut(from, "@")
	switch strings.ToLower(local) {
	case "mailer-daemon", "postmaster":
		return "a bounce (" + local + ")"
	}
	if ct := headerToken(h.Get("Content-Type")); ct == "multipart/report" {
		return "a delivery or read report (multipart/report)"
	}
	return ""
}

// headerToken is a structured header's first token, lower case, without
// comments and parameters.
func headerToken(v string) string {
	v = stripComments(v)
	v, _, _ = strings.Cut(v, ";")
	return strings.ToLower(strings.TrimSpace(v))
}

// stripComments removes RFC 5322 comments ("(…)", nested, with quoted
// pairs) outside quoted strings.
func stripComments(s string) string {
	var b strings.Builder
	depth, quoted := 0, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && (depth > 0 || quoted) && i+1 < len(s):
			if depth == 0 {
				b.WriteByte(ch)
				b.WriteByte(s[i+1])
			}
			i++
		case ch == '"' && depth == 0:
			quoted = !quoted
			b.WriteByte(ch)
		case ch == '(' && !quoted:
			depth++
		case ch == ')' && !quoted && depth > 0:
			depth--
			if depth == 0 {
				b.WriteByte(' ')
			}
		case depth == 0:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

// authResult is one method's verdict in an Authentication-Results header.
type authResult struct {
	method, result string
	props          map[string]string // "header.d" → "example.com"
}

// parseAuthResults parses one Authentication-Results value into its
// authserv-id and results (RFC 8601 §2.2); ok is false when it has no
// authserv-id.
func parseAuthResults(v string) (servID string, results []authResult, ok bool) {
	parts := splitUnquoted(stripComments(v), ';')
	head := strings.Fields(parts[0])
	if len(head) == 0 {
		return "", nil, false
	}
	servID = strings.ToLower(strings.Trim(head[0], `"`))
	for _, p := range parts[1:] {
		// "dkim = pass" is legal: close the spaces around '='.
		p = strings.Join(strings.Fields(p), " ")
		p = strings.ReplaceAll(strings.ReplaceAll(p, " =", "="), "= ", "=")
		f := strings.Fields(p)
		if len(f) == 0 {
			continue
		}
		method, result, found := strings.Cut(f[0], "=")
		if !found {
			continue // "none", or garbage
		}
		method, _, _ = strings.Cut(method, "/") // method version
		r := authResult{method: strings.ToLower(method), result: strings.ToLower(result), props: map[string]string{}}
		for _, kv := range f[1:] {
			k, val, found := strings.Cut(kv, "=")
			if found && strings.Contains(k, ".") {
				r.props[strings.ToLower(k)] = strings.ToLower(strings.Trim(val, `"`))
			}
		}
		results = append(results, r)
	}
	return servID, results, true
}

// splitUnquoted splits s at sep outside quoted strings.
func splitUnquoted(s string, sep byte) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && quoted:
			i++
		case s[i] == '"':
			quoted = !quoted
		case s[i] == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// authenticated decides whether the receiving server vouches for from: the
// topmost Authentication-Results header of servID (a sender can add such
// headers below it; those and every other server's are ignored) must say
// dmarc=pass for from's domain, or dkim=pass for a signing domain aligned
// with it. why explains a refusal.
func authenticated(h mail.Header, servID, from string) (ok bool, why string) {
	servID = strings.ToLower(servID)
	_, domain, _ := strings.Cut(from, "@")
	domain = strings.ToLower(domain)
	for _, v := range h["Authentication-Results"] {
		id, results, parsed := parseAuthResults(v)
		if !parsed || id != servID {
			continue
		}
		for _, r := range results {
			switch {
			case r.method == "dmarc" && r.result == "pass":
				if hf := r.props["header.from"]; hf == "" || hf == domain {
					return true, ""
				}
			case r.method == "dkim" && r.result == "pass":
				d := r.props["header.d"]
				if d == "" {
					if _, d0, found := strings.Cut(r.props["header.i"], "@"); found {
						d = d0
					}
				}
				if aligned(d, domain) {
					return true, ""
				}
			}
		}
		return false, "the Authentication-Results of " + servID + " show no dmarc=pass and no dkim=pass aligned with " + domain
	}
	return false, "no Authentication-Results header of " + servID
}

// aligned reports relaxed DMARC alignment of a DKIM signing domain with the
// From domain, approximated without the public suffix list: equal, or one
// a subdomain of the other, the signing domain having at least two labels.
func aligned(d, from string) bool {
	if d == "" || from == "" || !strings.Contains(d, ".") {
		return false
	}
	return d == from || strings.HasSuffix(from, "."+d) || strings.HasSuffix(d, "."+from)
}
