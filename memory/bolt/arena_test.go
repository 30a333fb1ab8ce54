package bolt

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// checkPatches asserts that the in-place changes of arena.go write what
// json.Marshal writes for the changed record, for records filled from data.
func checkPatches(t *testing.T, data []byte) {
	t.Helper()
	fl := filler{data: data}
	var it memory.InboxItem
	fl.fill(reflect.ValueOf(&it).Elem())
	it.State, it.TurnID, it.Answer = memory.InboxPending, "", ""
	turnID, answer := fl.str(), fl.str()
	if rec, err := json.Marshal(it); err == nil {
		got, ok := appendAnsweredItem([]byte("prefix"), rec, turnID, answer)
		want := it
		want.State, want.TurnID, want.Answer = memory.InboxAnswered, turnID, answer
		wantJSON, _ := json.Marshal(want)
		if !ok || !bytes.Equal(got, append([]byte("prefix"), wantJSON...)) {
			t.Fatalf("answered item (ok %v):\n got %s\nwant prefix%s", ok, got, wantJSON)
		}
		// An item in any other shape is left to the decoder.
		if _, ok := appendAnsweredItem(nil, wantJSON, "t", "a"); ok {
			t.Fatalf("an answered item must not be patched: %s", wantJSON)
		}
	}

	var r memory.OutboxRecord
	fl.fill(reflect.ValueOf(&r).Elem())
	r.Status, r.PlatformID, r.Error = memory.OutboxPending, "", ""
	status := []string{memory.OutboxDelivered, memory.OutboxFailed}[fl.byte()%2]
	pid, errText, now := fl.str(), fl.str(), fl.time()
	rec, err := json.Marshal(r)
	if err != nil {
		return // a time json.Marshal rejects is never written
	}
	got, ok := appendReceipt([]byte("prefix"), rec, status, pid, errText, now)
	want := r
	want.Status, want.PlatformID, want.Error, want.Updated = status, pid, errText, now
	wantJSON, werr := json.Marshal(want)
	if werr != nil {
		if ok {
			t.Fatalf("receipt at %v must fall back to the decoder", now)
		}
		return
	}
	if !ok || !bytes.Equal(got, append([]byte("prefix"), wantJSON...)) {
		t.Fatalf("receipt (ok %v):\n got %s\nwant prefix%s", ok, got, wantJSON)
	}
	if _, ok := appendReceipt(nil, wantJSON, status, pid, errText, now); ok {
		t.Fatalf("a completed record must not be patched: %s", wantJSON)
	}
}

func TestPatchesMatchEncodingJSON(t *testing.T) {
	for _, s := range trickyStrings {
		checkPatches(t, []byte(s))
	}
	// A text that holds the very field names and a pending status.
	r := memory.OutboxRecord{ID: 7, Target: "t", TurnID: "in-1", Text: `x,"status":"pending","created":"2020-01-01T00:00:00Z","updated":"z"}`,
		Status: memory.OutboxPending, Created: time.Unix(5, 0).UTC(), Updated: time.Unix(5, 0).UTC()}
	rec, _ := json.Marshal(r)
	got, ok := appendReceipt(nil, rec, memory.OutboxDelivered, "m1", "", time.Unix(9, 0).UTC())
	r.Status, r.PlatformID, r.Updated = memory.OutboxDelivered, "m1", time.Unix(9, 0).UTC()
	want, _ := json.Marshal(r)
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func FuzzPatches(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\xff\xfe<&>\"\\\u2028 😀 \x1f"))
	f.Add(bytes.Repeat([]byte{0x10, 0x21, 0x33, 0x41}, 16))
	f.Fuzz(checkPatches)
}
