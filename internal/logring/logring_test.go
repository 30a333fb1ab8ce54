package logring

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

// logger is a text logger at level whose records also go to a new ring.
func logger(o Options, level slog.Level) (*slog.Logger, *Ring, *bytes.Buffer) {
	var out bytes.Buffer
	r := New(o)
	return slog.New(r.Handler(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: level}))), r, &out
}

func texts(rs []Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Text
	}
	return out
}

// The ring keeps what the log gets, as text, with attributes, groups and
// LogValuers resolved (a config Secret shows "[redacted]"), and the log
// itself still gets every record.
func TestRingKeepsWhatTheLogGets(t *testing.T) {
	log, r, out := logger(Options{}, slog.LevelInfo)
	log.Debug("not logged")
	log.With("channel", "telegram").WithGroup("req").Info("sent", "id", 7, "token", platform.NewSecret("tok-123456"),
		slog.Group("peer", "name", "a b"), "err", errors.New("boom"))
	log.Warn(`quote " and = here`, "k", "")
	got := texts(r.Tail(slog.LevelDebug, 0))
	want := []string{
		`sent channel=telegram req.id=7 req.token=[redacted] req.peer.name="a b" req.err=boom`,
		`quote " and = here k=""`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ring:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := out.String(); !strings.Contains(s, "msg=sent") || strings.Contains(s, "not logged") || strings.Contains(s, "tok-123456") {
		t.Errorf("the log itself:\n%s", s)
	}
}

// Tail filters by level and returns the newest n, oldest first.
func TestTailLevelAndCount(t *testing.T) {
	log, r, _ := logger(Options{}, slog.LevelDebug)
	for i := range 6 {
		lv := []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}[i%4]
		log.Log(t.Context(), lv, fmt.Sprintf("m%d", i))
	}
	for _, tt := range []struct {
		level slog.Level
		n     int
		want  string
	}{
		{slog.LevelDebug, 0, "m0 m1 m2 m3 m4 m5"},
		{slog.LevelInfo, 0, "m1 m2 m3 m5"},
		{slog.LevelWarn, 0, "m2 m3"},
		{slog.LevelError, 0, "m3"},
		{slog.LevelDebug, 2, "m4 m5"},
		{slog.LevelInfo, 3, "m2 m3 m5"},
	} {
		if got := strings.Join(texts(r.Tail(tt.level, tt.n)), " "); got != tt.want {
			t.Errorf("Tail(%v, %d) = %q, want %q", tt.level, tt.n, got, tt.want)
		}
	}
}

// Bounded by records, by bytes and per record: the oldest go first, a long
// record is cut, and the ring never holds more than its bounds.
func TestRingBounds(t *testing.T) {
	for _, tt := range []struct {
		name        string
		o           Options
		lines       int
		lineLen     int
		wantRecords int
	}{
		{"records", Options{MaxRecords: 5}, 12, 10, 5},
		{"bytes", Options{MaxRecords: 100, MaxBytes: 100}, 30, 20, 5},
		{"both, growing", Options{MaxRecords: 300, MaxBytes: 2000}, 1000, 10, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := New(tt.o)
			for i := range tt.lines {
				r.Add(time.Now(), slog.LevelInfo, fmt.Sprintf("%0*d", tt.lineLen, i))
			}
			n, b := r.Len()
			if n != tt.wantRecords {
				t.Errorf("records = %d, want %d", n, tt.wantRecords)
			}
			tail := r.Tail(slog.LevelDebug, 0)
			if len(tail) != n {
				t.Fatalf("tail has %d records, Len says %d", len(tail), n)
			}
			sum := 0
			for i, rec := range tail {
				sum += len(rec.Text)
				if want := fmt.Sprintf("%0*d", tt.lineLen, tt.lines-n+i); rec.Text != want {
					t.Errorf("tail[%d] = %q, want %q (the newest, in order)", i, rec.Text, want)
				}
				if rec.Seq != uint64(tt.lines-n+i+1) {
					t.Errorf("tail[%d].Seq = %d", i, rec.Seq)
				}
			}
			if sum != b {
				t.Errorf("bytes = %d, the records hold %d", b, sum)
			}
		})
	}
	r := New(Options{MaxRecordBytes: 40})
	r.Add(time.Now(), slog.LevelInfo, strings.Repeat("é", 100))
	got := r.Tail(slog.LevelDebug, 0)[0].Text
	if len(got) > 40 || !strings.HasSuffix(got, "…[cut]") || !strings.HasPrefix(got, "éé") {
		t.Errorf("a long record is kept as %q (%d bytes)", got, len(got))
	}
}

// Every record's text passes the redaction before it is stored.
func TestRingRedacts(t *testing.T) {
	log, r, _ := logger(Options{}, slog.LevelInfo)
	r.SetRedact(func(s string) string { return strings.ReplaceAll(s, "hunter2", "[redacted]") })
	log.Info("login hunter2", "password", "hunter2")
	if got := r.Tail(slog.LevelDebug, 0)[0].Text; got != "login [redacted] password=[redacted]" {
		t.Errorf("stored %q", got)
	}
}

// Changed is closed by the next record, and only then.
func TestChangedWakesOnAppend(t *testing.T) {
	r := New(Options{})
	ch := r.Changed()
	select {
	case <-ch:
		t.Fatal("Changed is closed before any record")
	default:
	}
	r.Add(time.Now(), slog.LevelInfo, "x")
	<-ch // closed by the append (a hang here fails the test by timeout)
	if r.Changed() == ch {
		t.Error("Changed returns the closed channel again")
	}
}
