package hub

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels/markup"
	"github.com/switchboard-bot/switchboard/memory"
)

// TestFilesListShowsNamesAsWritten: /files is sent as Markdown like every
// reply, so a file named "<b>*bold*_x_`.md" used to show as "<b>boldx`.md"
// (and "<script>…" as an HTML block set apart by blank lines): the user could
// not read the real name. Each name shows as written on every dialect.
func TestFilesListShowsNamesAsWritten(t *testing.T) {
	names := []string{"<b>*bold*_x_`.md", "<script>alert(1)</script>.html", `"; rm -rf ~ #.txt`,
		"[x](javascript:alert(1)).txt", "a\\b_c_.txt", "# heading.txt", "- item.txt", "1. one.txt", "~~gone~~.txt", "notes/my_plan-2.md"}
	var list []memory.FileInfo
	for _, n := range names {
		list = append(list, memory.FileInfo{Path: n, Size: 1})
	}
	md := filesText(list, memory.WorkspaceLimits{}.WithDefaults())
	// A plain name is not escaped: the terminal console shows the Markdown.
	if !strings.Contains(md, "\nnotes/my_plan-2.md — 1 byte\n") {
		t.Errorf("a plain name was escaped:\n%s", md)
	}
	for _, d := range []struct {
		name   string
		render func(string) string
	}{{"plain", markup.Plain}, {"telegram", func(s string) string { return markup.TelegramChunks(s, 4096)[0].Plain }}} {
		got := d.render(md)
		lines := strings.Split(got, "\n")
		for _, n := range names {
			want := n + " — 1 byte"
			found := false
			for _, l := range lines {
				found = found || strings.TrimSpace(l) == want
			}
			if !found {
				t.Errorf("%s: no line %q in:\n%s", d.name, want, got)
			}
		}
		if strings.Contains(got, "\n\n") {
			t.Errorf("%s: blank lines in the list:\n%s", d.name, got)
		}
	}
	if html := markup.TelegramHTML(md); strings.Contains(html, "<script") || strings.Contains(html, "<i>") || strings.Contains(html, "<a ") {
		t.Errorf("telegram HTML has markup from a file name:\n%s", html)
	}
}
