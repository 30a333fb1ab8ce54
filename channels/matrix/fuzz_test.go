package matrix

import (
	"context"
	"encoding/json"
	"testing"
)

// Room events are outside input: whatever the homeserver sends, handling
// it does not panic, and a message that comes out has its ids.
func FuzzHandleEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"m.room.message","event_id":"$1","sender":"@a:x","content":{"msgtype":"m.text","body":"hi"}}`,
		`{"type":"m.room.message","event_id":"$2","sender":"@a:x","content":{"msgtype":"m.text","body":"> <@b:x> q\n\nSwitchboard: a","m.relates_to":{"m.in_reply_to":{"event_id":"$1"}}}}`,
		`{"type":"m.room.message","event_id":"$3","sender":"@a:x","content":{"msgtype":"m.image","url":"mxc://x/y","info":{"size":-1}}}`,
		`{"type":"m.room.member","event_id":"$4","sender":"@a:x","state_key":"@a:x","content":{"displayname":"A"}}`,
		`{"type":"m.room.message","event_id":"$5","sender":"@a:x","content":{"m.mentions":{"user_ids":["@switchboard:x"]},"body":"@switchboard:x"}}`,
	} {
		f.Add([]byte(s))
	}
	a, err := New(Options{Homeserver: "http://127.0.0.1:1", AccessToken: "t", UserID: "@switchboard:x", MaxMediaBytes: -1})
	if err != nil {
		f.Fatal(err)
	}
	a.name = "Switchboard"
	f.Fuzz(func(t *testing.T, raw []byte) {
		rec := newRecorder()
		_ = a.handleEvent(context.Background(), rec, "!r:x", json.RawMessage(raw))
		for _, m := range rec.all() {
			if m.MessageID == "" || m.Sender.ID == "" || m.ChatID != "!r:x" {
				t.Errorf("incomplete message %+v", m)
			}
		}
	})
}
