package markup

import (
	"strings"
	"testing"
)

// TestOneChunkAnswerConvertedOnce: an answer that fits one message comes
// out as one chunk equal to the whole text's conversion, and converting it
// costs little more than the conversion itself (it was also split into
// words and converted a second time: ~490 allocations for a 260-character
// answer, formatted for every streamed preview and again for the answer).
func TestOneChunkAnswerConvertedOnce(t *testing.T) {
	md := "echo: q1x2z " + strings.Repeat("lorem ipsum dolor sit amet, **consectetur** adipiscing elit, sed do eiusmod tempor ", 3)
	chunks := TelegramChunks(md, 4000)
	if len(chunks) != 1 || chunks[0].Text != TelegramHTML(md) || chunks[0].Plain != Plain(md) {
		t.Fatalf("chunks = %+v; want the whole answer as one chunk", chunks)
	}
	whole := testing.AllocsPerRun(20, func() { TelegramHTML(md); Plain(md) })
	got := testing.AllocsPerRun(20, func() { TelegramChunks(md, 4000) })
	if got > whole+10 {
		t.Errorf("TelegramChunks of a one-chunk answer: %.0f allocations; converting it takes %.0f", got, whole)
	}
}
