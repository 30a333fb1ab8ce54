package ui_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/memory"
)

// Issue 31: a session's Files section, in a browser: hostile file names and
// an HTML file the model wrote show as text and download as attachments —
// no script runs, no CSP violation, the console's origin renders nothing.
func TestBrowserSessionFiles(t *testing.T) {
	r := startRig(t, rigOptions{})
	p := r.browse()
	openChat(p, r.base)
	say(p, "keep my files")
	p.WaitText("#chat-history .msg.assistant", "keep my files")

	ctx := context.Background()
	st := r.d.Store()
	list, err := st.ListSessions(ctx)
	if err != nil || len(list) == 0 {
		t.Fatalf("sessions = %v, %v", list, err)
	}
	key := list[0].Key
	// The screenshot first, of files an agent would write; the hostile
	// change below replaces them.
	clean := []memory.FileWrite{
		{Path: "notes.md", Content: []byte("# plan\n")},
		{Path: "report/summary.md", Content: []byte("# Weekly summary\n\nThree issues closed, one opened.\n")},
		{Path: "report/issues.csv", Content: []byte("id,title,state\n41,Retry delivery,closed\n42,Dark theme,open\n")},
	}
	if err := st.ApplyFiles(ctx, key, memory.WorkspaceChange{Writes: clean}, memory.WorkspaceLimits{}); err != nil {
		t.Fatal(err)
	}
	p.Navigate(r.base + "/ui/sessions/show?key=" + key)
	p.WaitText("#files", "report/issues.csv")
	r.screenshot(p, "files")

	const hostile = `<img src=x onerror=alert(1)>.html`
	change := memory.WorkspaceChange{Writes: []memory.FileWrite{
		{Path: "docs/" + hostile, Content: []byte(`<script>alert(2)</script><img src=y onerror=alert(3)>`)},
		{Path: "notes.md", Content: []byte("# plan\n")},
	}, Deletes: []string{"report/summary.md", "report/issues.csv"}}
	if err := st.ApplyFiles(ctx, key, change, memory.WorkspaceLimits{}); err != nil {
		t.Fatal(err)
	}
	p.Navigate(r.base + "/ui/sessions/show?key=" + key)
	p.WaitText("#files", hostile)
	p.WaitText("#files-total", "2 file(s), 60 bytes")
	if rows := tableRows(p, "#files"); !strings.Contains(rows, "docs/"+hostile+"|53 bytes") || !strings.Contains(rows, "notes.md|7 bytes") {
		t.Fatalf("files table = %q", rows)
	}
	for _, sel := range []string{`#files img`, `#files script`, `[onerror]`} {
		if n := p.Count(sel); n != 0 {
			t.Errorf("%d element(s) match %s: a file name became markup", n, sel)
		}
	}
	// The HTML file's link downloads it (an attachment: the headers are
	// TestSessionFileDownload's); clicking it runs nothing here.
	href := p.Eval(`document.querySelector("#files a").getAttribute("href")`)
	if !strings.HasPrefix(href, "/ui/sessions/file?key=") || !strings.Contains(href, "path=docs%2f%3cimg") {
		t.Fatalf("download link = %q", href)
	}
	p.Eval(`(() => { document.querySelectorAll("#files a").forEach(a => a.click()); return "" })()`)
	p.NoScriptRan()
	if d := p.Dialogs(); len(d) != 0 {
		t.Fatalf("dialogs opened: %q", d)
	}
}
