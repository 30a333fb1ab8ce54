package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Issue 28: `storage migrate` with no flags said "needs --from--, --to".
func TestRequiredFlagsNamedPlainly(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"storage", "migrate"}, "`switchboard storage migrate` needs --from and --to; usage:"},
		{[]string{"storage", "migrate", "--from", "bolt:x.db"}, "`switchboard storage migrate` needs --to; usage:"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`"from", "to" not set`, "--from and --to"},
		{`"a", "b", "c" not set`, "--a, --b and --c"},
		{`"to" not set`, "--to"},
	} {
		if got := requiredFlags(c.in); got != c.want {
			t.Errorf("requiredFlags(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
