package redact

import "testing"

func TestRedactURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"},
		{"https://user:hunter2@llm.example.com/v1", "https://user:[redacted]@llm.example.com/v1"},
		{"https://sk-abcdef@llm.example.com/v1", "https://[redacted]@llm.example.com/v1"},
		{"https://llm.example.com/v1?api-key=sk-123&model=x", "https://llm.example.com/v1?api-key=[redacted]&model=x"},
		{"https://llm.example.com/v1?api_key=sk-123", "https://llm.example.com/v1?api_key=[redacted]"},
		{"https://x.example.com/?key=K1&token=T1&secret=S1&password=P1&sig=G1&signature=N1", "https://x.example.com/?key=[redacted]&token=[redacted]&secret=[redacted]&password=[redacted]&sig=[redacted]&signature=[redacted]"},
		{"https://x.example.com/?X-Amz-Signature=abc&X-Amz-Date=20250101", "https://x.example.com/?X-Amz-Signature=[redacted]&X-Amz-Date=20250101"},
		{"https://x.example.com/?Bot_Token=abc&page=2", "https://x.example.com/?Bot_Token=[redacted]&page=2"},
		{"https://x.example.com/cb#access_token=abc&state=1", "https://x.example.com/cb#[redacted]"},
		{"https://x.example.com/?apikey", "https://x.example.com/?apikey"},
		{"postgres://bot:pg-pass@db:5432/sb?sslmode=disable&password=again", "postgres://bot:[redacted]@db:5432/sb?sslmode=disable&password=[redacted]"},
		{"wss://gw.example.com/?v=10&encoding=json", "wss://gw.example.com/?v=10&encoding=json"},
		{"http://[::1:bad@host/?token=x", "[redacted URL]"},
	}
	for _, c := range cases {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
