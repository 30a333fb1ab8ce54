package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/memory"
)

// corruptFixture writes a healthy store with enough sessions to span many
// pages, closes it and returns its path and size.
func corruptFixture(t *testing.T) (string, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	s := openAt(t, path, testOpts(newClock()))
	ctx := context.Background()
	for i := 0; i < 150; i++ {
		key := fmt.Sprintf("telegram:%d", i)
		mustNo(t, s.AppendTurn(ctx, key, memory.Turn{ID: fmt.Sprintf("t%d", i), Messages: []memory.Message{
			{Role: memory.RoleUser, Content: strings.Repeat("question ", 40)},
			{Role: memory.RoleAssistant, Content: strings.Repeat("answer ", 60)},
		}}))
	}
	mustNo(t, s.Close())
	fi, err := os.Stat(path)
	mustNo(t, err)
	return path, fi.Size()
}

// TestOpenRejectsCorruptData covers issue 13 defect 4: a half-truncated or
// garbage-written database used to open fine and then panic inside bolt on
// the first read or write. Open must run the consistency check doctor runs
// and fail with ErrInvalidDatabase; nothing may panic.
func TestOpenRejectsCorruptData(t *testing.T) {
	page := int64(os.Getpagesize())
	cases := []struct {
		name    string
		corrupt func(t *testing.T, path string, size int64)
	}{
		{"truncated to half", func(t *testing.T, path string, size int64) {
			mustNo(t, os.Truncate(path, size/2))
		}},
		{"truncated to three pages", func(t *testing.T, path string, size int64) {
			mustNo(t, os.Truncate(path, 3*page))
		}},
		{"garbage over the data pages", func(t *testing.T, path string, size int64) {
			garbage(t, path, 2*page, size-2*page, 1)
		}},
		{"garbage over the second half", func(t *testing.T, path string, size int64) {
			garbage(t, path, size/2, size-size/2, 2)
		}},
		{"garbage in the leaf pages, header and freelist intact", func(t *testing.T, path string, size int64) {
			eachPage(t, path, func(p []byte) {
				if binary.LittleEndian.Uint16(p[8:]) == 0x02 { // leaf
					rand.New(rand.NewSource(int64(len(p)))).Read(p[16:])
				}
			})
		}},
		{"wild page ids in the branch pages", func(t *testing.T, path string, size int64) {
			n := 0
			eachPage(t, path, func(p []byte) {
				if binary.LittleEndian.Uint16(p[8:]) == 0x01 { // branch
					n++
					for i := 0; i < int(binary.LittleEndian.Uint16(p[10:])); i++ {
						binary.LittleEndian.PutUint64(p[16+i*16+8:], 1<<40+uint64(i))
					}
				}
			})
			if n == 0 {
				t.Fatal("fixture has no branch page")
			}
		}},
		{"zeros over the data pages", func(t *testing.T, path string, size int64) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			mustNo(t, err)
			defer f.Close()
			_, err = f.WriteAt(make([]byte, size-2*page), 2*page)
			mustNo(t, err)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, size := corruptFixture(t)
			c.corrupt(t, path, size)
			s, err := Open(path, testOpts(newClock()))
			if err == nil {
				defer s.Close()
				// Whatever Open let through must not panic on use.
				_, lerr := s.LoadHistory(context.Background(), "telegram:3", 50)
				aerr := s.AppendTurn(context.Background(), "telegram:3", memory.Turn{ID: "n", Messages: []memory.Message{{Role: memory.RoleUser, Content: "hi"}}})
				t.Fatalf("Open succeeded on a corrupt file (then LoadHistory: %v, AppendTurn: %v)", lerr, aerr)
			}
			if !errors.Is(err, memory.ErrInvalidDatabase) {
				t.Errorf("err = %v, want memory.ErrInvalidDatabase", err)
			}
			t.Log(err)
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "move the file aside") {
				t.Errorf("error %q should name the file and say how to fix it", msg)
			}
		})
	}
}

// eachPage lets fn rewrite every page of the file except the two meta pages
// and the freelist (so bbolt.Open itself succeeds, as on the reported file).
func eachPage(t *testing.T, path string, fn func(page []byte)) {
	t.Helper()
	data, err := os.ReadFile(path)
	mustNo(t, err)
	ps := os.Getpagesize()
	m0, _ := readMeta(bytes.NewReader(data), 0)
	m1, _ := readMeta(bytes.NewReader(data), int64(ps))
	keep := map[uint64]bool{m0.freelist: true, m1.freelist: true}
	for i := 2; (i+1)*ps <= len(data); i++ {
		if !keep[uint64(i)] {
			fn(data[i*ps : (i+1)*ps])
		}
	}
	mustNo(t, os.WriteFile(path, data, 0o600))
}

func garbage(t *testing.T, path string, off, n int64, seed int64) {
	t.Helper()
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	mustNo(t, err)
	defer f.Close()
	_, err = f.WriteAt(b, off)
	mustNo(t, err)
}

// TestDamageAfterOpenIsAnErrorNotACrash: a file damaged underneath a running
// store (bolt reads it through a shared memory map) makes reads and writes
// fail with ErrInvalidDatabase; no bolt panic escapes.
func TestDamageAfterOpenIsAnErrorNotACrash(t *testing.T) {
	for _, group := range []bool{false, true} {
		t.Run(fmt.Sprintf("group commit %v", group), func(t *testing.T) {
			path, _ := corruptFixture(t)
			opts := testOpts(newClock())
			opts.GroupCommit = group
			s := openAt(t, path, opts)
			eachPage(t, path, func(p []byte) {
				if binary.LittleEndian.Uint16(p[8:]) == 0x01 { // branch
					for i := 0; i < int(binary.LittleEndian.Uint16(p[10:])); i++ {
						binary.LittleEndian.PutUint64(p[16+i*16+8:], 1<<40+uint64(i))
					}
				}
			})
			ctx := context.Background()
			_, err := s.LoadHistory(ctx, "telegram:77", 50)
			if !errors.Is(err, memory.ErrInvalidDatabase) {
				t.Errorf("LoadHistory on a damaged file: err = %v, want memory.ErrInvalidDatabase", err)
			}
			err = s.AppendTurn(ctx, "telegram:77", memory.Turn{ID: "late", Messages: []memory.Message{{Role: memory.RoleUser, Content: "hi"}}})
			if err == nil {
				t.Errorf("AppendTurn on a damaged file succeeded")
			}
			t.Log(err)
			if err := s.Check(); !errors.Is(err, memory.ErrInvalidDatabase) {
				t.Errorf("Check: err = %v, want memory.ErrInvalidDatabase", err)
			}
		})
	}
}
