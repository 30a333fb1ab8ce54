package ui_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboard-bot/switchboard/internal/testkit/browser"
)

// chooseFile puts the file at path into the page's upload input.
func chooseFile(t *testing.T, p *browser.Page, path string) {
	t.Helper()
	if err := chromedp.Do(p.Context(), chromedp.SetUploadFiles(chromedp.CSS("#upload-file"), []string{path})); err != nil {
		t.Fatalf("choose %s: %v", path, err)
	}
}

// Issue 32: a file uploaded in the console's chat reaches the model like any
// platform's attachment (the model sees the document's excerpt); a file
// named with HTML is shown as the text it is; a file over media.max_upload
// is refused with the limit and the key, before and after the page's own
// check.
func TestBrowserChatUploadReachesTheModel(t *testing.T) {
	const hostile = `<img src=x onerror=alert(1)>.txt`
	r := startRig(t, rigOptions{LLM: nil, Extra: "media:\n  max_upload: 2KiB\n"})
	p := r.browse()
	openChat(p, r.base)
	dir := t.TempDir()
	small := filepath.Join(dir, hostile)
	if err := os.WriteFile(small, []byte("Quarterly numbers: revenue 42, costs 17.\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	chooseFile(t, p, small)
	p.Click("#upload-send")
	p.WaitText("#upload-status", "Sent "+hostile+".")
	p.WaitText("#chat-history .msg.user", hostile) // the name, shown as text
	p.WaitText("#chat-history .msg.assistant", "revenue 42")
	got := r.llm.LastRequest().LastUserText()
	if !strings.Contains(got, "Quarterly numbers: revenue 42, costs 17.") || !strings.Contains(got, `trust="untrusted"`) {
		t.Errorf("the model saw %q, want the document's excerpt", got)
	}
	for _, sel := range []string{`#chat-history img`, `[onerror]`, `img[src="x"]`} {
		if n := p.Count(sel); n != 0 {
			t.Errorf("%d element(s) match %s: the file name became markup", n, sel)
		}
	}
	p.NoScriptRan()

	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 3<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	const refusal = "the file is larger than 2 KiB, the most the console takes (media.max_upload)"
	chooseFile(t, p, big)
	requests := len(r.llm.Requests())
	p.Click("#upload-send")
	p.WaitText("#upload-status", "Not sent: "+refusal)
	// The server holds the bound too (a page without the script, a client
	// that lies): its answer is as clear.
	p.Eval(`(() => {
		const fd = new FormData(document.getElementById("upload-form"));
		fetch("/ui/chat/upload", {method: "POST", body: fd,
			headers: {"X-CSRF-Token": document.body.dataset.csrf}, credentials: "same-origin"})
			.then(async r => { window.__upload = r.status + " " + (await r.text()).trim(); });
		return "";
	})()`)
	p.WaitFor("the server's answer to the upload", `window.__upload !== undefined`)
	server := p.Eval(`window.__upload`)
	if server != "413 "+refusal {
		t.Errorf("the server answered %q, want 413 and %q", server, refusal)
	}
	if n := len(r.llm.Requests()); n != requests {
		t.Errorf("the model was asked %d more time(s) after refused uploads", n-requests)
	}
	p.NoScriptRan()
}
