package sandbox

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// capBuffer is an io.Writer that keeps the first and the last bytes of a
// stream and counts what it drops in between, so a command that prints
// gigabytes costs at most max bytes of memory.
type capBuffer struct {
	mu    sync.Mutex
	max   int    // head + tail capacity in bytes
	head  []byte // the first max/2 bytes
	tail  []byte // ring of the last max-max/2 bytes once head is full
	start int    // index of the oldest byte in tail when full
	total int64  // bytes written
}

func newCapBuffer(max int) *capBuffer {
	return &capBuffer{max: max}
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	headCap := b.max / 2
	if room := headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	tailCap := b.max - headCap
	if tailCap == 0 || len(p) == 0 {
		return n, nil
	}
	if len(p) >= tailCap {
		b.tail = append(b.tail[:0], p[len(p)-tailCap:]...)
		b.start = 0
		return n, nil
	}
	for len(p) > 0 {
		if len(b.tail) < tailCap {
			k := min(tailCap-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(b.tail[b.start:], p)
		p = p[k:]
		b.start = (b.start + k) % tailCap
	}
	return n, nil
}

// cut reports whether bytes were dropped.
func (b *capBuffer) cut() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total > int64(len(b.head)+len(b.tail))
}

// String is the kept text: everything when nothing was dropped, otherwise the
// head, a marker "[… N bytes cut …]" and the tail. Invalid UTF-8 (binary
// output, a rune split by the cut) is replaced, never passed on.
func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := make([]byte, 0, len(b.tail))
	tail = append(tail, b.tail[b.start:]...)
	tail = append(tail, b.tail[:b.start]...)
	dropped := b.total - int64(len(b.head)+len(tail))
	if dropped <= 0 {
		return strings.ToValidUTF8(string(b.head)+string(tail), "\uFFFD")
	}
	head := b.head
	// Do not split a rune at either edge of the cut.
	for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				head = head[:i]
			}
			break
		}
	}
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	dropped = b.total - int64(len(head)+len(tail))
	return strings.ToValidUTF8(string(head), "\uFFFD") +
		fmt.Sprintf("\n[… %d bytes cut …]\n", dropped) +
		strings.ToValidUTF8(string(tail), "\uFFFD")
}
