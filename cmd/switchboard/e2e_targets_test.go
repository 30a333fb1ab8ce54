package main

// Issue 33, from an operator's side: the Matrix and WhatsApp address forms in
// config.yaml (deliver_to, personas.by_target, access.allow_from). A form the
// platform would never produce (a WhatsApp number without '+', a Matrix room
// without its server, an IPv6 server name without brackets) must be refused
// by `config validate` with the form to write, not accepted and then never
// match the session key of the chat it names.

import (
	"strings"
	"testing"
)

func TestBinaryPlatformTargetForms(t *testing.T) {
	cases := []struct {
		name, where, addr string
		ok                bool
		want              string // in the error
	}{
		{"whatsapp E.164", "deliver_to", "whatsapp:+4915112345678", true, ""},
		{"whatsapp without plus", "deliver_to", "whatsapp:4915112345678", false, "whatsapp:+4915112345678"},
		{"whatsapp without plus, persona", "by_target", "whatsapp:4915112345678", false, "whatsapp:+4915112345678"},
		{"whatsapp user without plus", "allow_from", "whatsapp:user:4915112345678", false, "whatsapp:user:+4915112345678"},
		{"whatsapp not a number", "deliver_to", "whatsapp:+49-151-abc", false, "E.164"},
		{"matrix room with port", "deliver_to", "matrix:!room:example.org:8448", true, ""},
		{"matrix room on IPv6 with port", "by_target", "matrix:!room:[2001:db8::1]:8448", true, ""},
		{"matrix thread", "deliver_to", "matrix:!room:example.org:$root", true, ""},
		{"matrix room without server", "deliver_to", "matrix:!room", false, "!room:example.org"},
		{"matrix room, empty server", "by_target", "matrix:!room:", false, "!room:example.org"},
		{"matrix unbracketed IPv6", "deliver_to", "matrix:!room:::1", false, "[::1]"},
		{"matrix user", "allow_from", "matrix:user:@ada:example.org", true, ""},
		{"matrix user without @", "allow_from", "matrix:user:ada", false, "@ada:example.org"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var extra string
			switch tc.where {
			case "deliver_to":
				extra = "jobs:\n  - name: j\n    schedule: \"0 9 * * *\"\n    kind: reminder\n    text: hi\n    deliver_to: [\"" + tc.addr + "\"]\n"
			case "by_target":
				extra = "personas:\n  dir: ./personas\n  by_target: {\"" + tc.addr + "\": assistant}\n"
			case "allow_from":
				extra = "access:\n  mode: allowlist\n  allow_from: [\"" + tc.addr + "\"]\n"
			}
			cfg := writeConfig(t, "bot:\n  data_dir: ./data\nllm:\n  base_url: http://127.0.0.1:1/v1\n  api_key: k\n"+
				"channels:\n  console:\n    enabled: false\n"+extra)
			r := runBin(t, cleanEnv(), "--config", cfg, "config", "validate")
			out := r.stdout + r.stderr
			if tc.ok != (r.code == 0) || !strings.Contains(out, tc.want) {
				t.Fatalf("%s %q: exit %d (want ok=%t, error naming %q)\n%s", tc.where, tc.addr, r.code, tc.ok, tc.want, out)
			}
		})
	}
}
