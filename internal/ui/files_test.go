package ui_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

// Issue 31: a workspace file downloads as an attachment that no browser
// renders, under a safe name; the Files section lists it; a path outside
// the workspace, or of another chat, is not served; logged out, nothing is.
func TestSessionFileDownload(t *testing.T) {
	r := startConsole(t, cOptions{LLM: fakellm.Text("ok")})
	chatTurn(t, r, "files", "hello")
	const key = "web:files"
	page := `<html><script>alert(1)</script></html>`
	change := memory.WorkspaceChange{Writes: []memory.FileWrite{
		{Path: "out/report \"final\".html", Content: []byte(page)},
		{Path: "данные.csv", Content: []byte("a,b\n")},
	}}
	if err := r.d.Store().ApplyFiles(context.Background(), key, change, memory.WorkspaceLimits{}); err != nil {
		t.Fatal(err)
	}
	anon := newClient(t, r.base)
	if res := anon.get("/ui/sessions/file?key=web:files&path=%D0%B4%D0%B0%D0%BD%D0%BD%D1%8B%D0%B5.csv"); res.Code == http.StatusOK {
		t.Fatalf("logged out, the file was served: %d %q", res.Code, res.Body)
	}
	c := newClient(t, r.base)
	c.login(cAdminToken)
	show := c.get("/ui/sessions/show?key=" + key)
	if show.Code != http.StatusOK || !strings.Contains(show.Body, `out/report &#34;final&#34;.html`) || !strings.Contains(show.Body, "2 file(s), 42 bytes") {
		t.Fatalf("session page (%d) lacks the files:\n%s", show.Code, show.Body)
	}
	tests := []struct {
		name, path  string
		code        int
		body        string
		disposition string
	}{
		{"html file", "out/report%20%22final%22.html", 200, page, `attachment; filename="report__final_.html"; filename*=UTF-8''report%20%22final%22.html`},
		{"unicode name", "%D0%B4%D0%B0%D0%BD%D0%BD%D1%8B%D0%B5.csv", 200, "a,b\n", `attachment; filename="____________.csv"; filename*=UTF-8''%D0%B4%D0%B0%D0%BD%D0%BD%D1%8B%D0%B5.csv`},
		{"normalized path", ".%2Fout%2F%2Freport%20%22final%22.html", 200, page, ""},
		{"traversal", "..%2F..%2Fetc%2Fpasswd", 404, "", ""},
		{"absolute", "%2Fetc%2Fpasswd", 404, "", ""},
		{"missing", "nope.txt", 404, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := c.get("/ui/sessions/file?key=" + key + "&path=" + tc.path)
			if res.Code != tc.code {
				t.Fatalf("status %d, want %d: %q", res.Code, tc.code, res.Body)
			}
			if tc.code != 200 {
				return
			}
			h := res.Header
			if res.Body != tc.body || h.Get("Content-Type") != "application/octet-stream" || h.Get("X-Content-Type-Options") != "nosniff" ||
				!strings.Contains(h.Get("Content-Security-Policy"), "sandbox") || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment; ") {
				t.Fatalf("served %q with headers %v", res.Body, h)
			}
			if tc.disposition != "" && h.Get("Content-Disposition") != tc.disposition {
				t.Fatalf("Content-Disposition = %q, want %q", h.Get("Content-Disposition"), tc.disposition)
			}
		})
	}
	if res := c.get("/ui/sessions/file?key=web:other&path=notes.md"); res.Code != http.StatusNotFound {
		t.Fatalf("another chat's path = %d", res.Code)
	}
}
