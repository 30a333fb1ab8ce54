package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// The usage book (memory.UsageBook) lives in the bucket usage. Detail rows
// are keyed day\x00chat\x00persona\x00job\x00model; beside them, the day's
// total under day and the chat's under day\x00chat, so the budget gate's
// reads are one Get each. Every value is 16 bytes: prompt and completion
// tokens, big-endian. A key part never holds \x00 (session keys, persona,
// job and model names are printable text); one that does is cut there.

const usageSep = "\x00"

func usagePart(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// addUsageTx adds the turn's tokens to the usage book inside tx.
func addUsageTx(tx *bbolt.Tx, rows []memory.UsageRow) error {
	if len(rows) == 0 {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bUsage)
	if err != nil {
		return fmt.Errorf("usage bucket: %w", err)
	}
	for _, r := range rows {
		day, chat := usagePart(r.Day), usagePart(r.Chat)
		keys := []string{
			day,
			day + usageSep + chat,
			day + usageSep + chat + usageSep + usagePart(r.Persona) + usageSep + usagePart(r.Job) + usageSep + usagePart(r.Model),
		}
		for _, k := range keys {
			if err := addTokens(b, []byte(k), r.PromptTokens, r.CompletionTokens); err != nil {
				return fmt.Errorf("usage %q: %w", k, err)
			}
		}
	}
	return nil
}

func addTokens(b *bbolt.Bucket, k []byte, prompt, completion int64) error {
	p, c := decodeTokens(b.Get(k))
	var v [16]byte
	binary.BigEndian.PutUint64(v[:8], uint64(p+prompt))
	binary.BigEndian.PutUint64(v[8:], uint64(c+completion))
	return b.Put(k, v[:])
}

func decodeTokens(v []byte) (prompt, completion int64) {
	if len(v) != 16 {
		return 0, 0
	}
	return int64(binary.BigEndian.Uint64(v[:8])), int64(binary.BigEndian.Uint64(v[8:]))
}

func tokensUsage(p, c int64) memory.Usage {
	return memory.Usage{PromptTokens: int(p), CompletionTokens: int(c), TotalTokens: int(p + c)}
}

// UsageOn returns the tokens of day, of every chat or of one (memory.UsageBook).
func (s *Store) UsageOn(ctx context.Context, day, chat string) (memory.Usage, error) {
	k := usagePart(day)
	if chat != "" {
		k += usageSep + usagePart(chat)
	}
	var u memory.Usage
	err := s.view(ctx, "read usage of "+day, func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bUsage); b != nil {
			u = tokensUsage(decodeTokens(b.Get([]byte(k))))
		}
		return nil
	})
	return u, err
}

// UsageRows returns the detail rows f selects (memory.UsageBook).
func (s *Store) UsageRows(ctx context.Context, f memory.UsageFilter) ([]memory.UsageRow, error) {
	var out []memory.UsageRow
	err := s.view(ctx, "read usage", func(tx *bbolt.Tx) error {
		out = out[:0]
		b := tx.Bucket(bUsage)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		k, v := c.First()
		if f.From != "" {
			k, v = c.Seek([]byte(f.From))
		}
		for ; k != nil; k, v = c.Next() {
			parts := bytes.Split(k, []byte(usageSep))
			day := string(parts[0])
			if f.To != "" && day > f.To {
				break
			}
			if len(parts) != 5 {
				continue // a total
			}
			if f.Chat != "" && string(parts[1]) != f.Chat {
				continue
			}
			p, cpl := decodeTokens(v)
			out = append(out, memory.UsageRow{Day: day, Chat: string(parts[1]), Persona: string(parts[2]),
				Job: string(parts[3]), Model: string(parts[4]), PromptTokens: p, CompletionTokens: cpl})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
