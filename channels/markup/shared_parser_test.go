package markup

import (
	"fmt"
	"sync"
	"testing"
)

// TestConvertConcurrently: the one shared goldmark parser gives every
// concurrent conversion the result a lone conversion gives (run with -race).
func TestConvertConcurrently(t *testing.T) {
	docs := []string{
		"# Title\n\n**bold** and _italic_ ~~gone~~ https://example.com\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
		"- [x] done\n- [ ] todo\n\n> quoted `code`\n\n```go\nfmt.Println(1)\n```\n",
		"plain <b>text</b> & [link](https://example.org) *nested **strong** em*",
	}
	want := make([]string, len(docs))
	for i, d := range docs {
		want[i] = TelegramHTML(d) + "|" + SlackMrkdwn(d) + "|" + Plain(d)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(docs))
	for g := range 8 {
		wg.Go(func() {
			for n := range 50 {
				i := (g + n) % len(docs)
				if got := TelegramHTML(docs[i]) + "|" + SlackMrkdwn(docs[i]) + "|" + Plain(docs[i]); got != want[i] {
					errs <- fmt.Errorf("doc %d: got %q, want %q", i, got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
