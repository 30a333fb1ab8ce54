package redact

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Passwords finds every piece of a URL's or DSN's password a driver may
// echo, also when an unencoded '@' or '/' splits it (pgx then reads part of
// the password as the host name).
func TestPasswords(t *testing.T) {
	for _, tt := range []struct {
		name, raw string
		want      []string // each must be among the result
		not       []string // none may be
	}{
		{"plain", "postgres://sb:pw-Secret1@db:5432/x", []string{"pw-Secret1"}, []string{"sb", "db"}},
		{"unencoded @", "postgres://sb:PG@SECRET9@127.0.0.1:1/db", []string{"PG@SECRET9", "SECRET9"}, []string{"127.0.0.1"}},
		{"two @", "postgres://sb:ab@cdef@ghij@h/db", []string{"ab@cdef@ghij", "cdef", "ghij"}, []string{"h"}},
		{"encoded @", "postgres://sb:PG%40SECRET9@h/db", []string{"PG%40SECRET9", "PG@SECRET9"}, nil},
		{"unencoded /", "postgres://sb:pa/ssword9@h/db", []string{"pa/ssword9", "ssword9"}, nil},
		{"no password", "postgres://sb@h/db", nil, []string{"sb", "h"}},
		{"no userinfo", "postgres://h:5432/db", nil, []string{"h"}},
		{"dsn", "host=h user=sb password=pw-Secret1 dbname=x", []string{"pw-Secret1"}, []string{"sb", "h"}},
		{"dsn quoted", "host=h password='pw Secret1' dbname=x", []string{"pw Secret1"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Passwords(tt.raw)
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("Passwords(%q) = %q, want it to hold %q", tt.raw, got, w)
				}
			}
			for _, n := range tt.not {
				if slices.Contains(got, n) {
					t.Errorf("Passwords(%q) = %q holds %q", tt.raw, got, n)
				}
			}
		})
	}
	// pgx's text for the unencoded '@' (it took "SECRET9@127.0.0.1" for
	// the host).
	raw := "postgres://sb:PG@SECRET9@127.0.0.1:1/db"
	err := Error(errors.New("failed to connect to `user=sb database=db`:\n\thostname resolving error: lookup SECRET9@127.0.0.1: no such host"), append(Passwords(raw), "PG")...)
	if strings.Contains(err.Error(), "SECRET9") {
		t.Fatalf("a piece of the password is in %q", err)
	}
}
