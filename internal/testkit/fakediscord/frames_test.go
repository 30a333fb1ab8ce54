package fakediscord

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"io"
	"testing"
)

// TestDispatchFrameIsTheMarshalledPayload: the hand-built dispatch frame is
// byte for byte what json.Marshal makes of the gateway payload.
func TestDispatchFrameIsTheMarshalledPayload(t *testing.T) {
	msg, _ := json.Marshal(Message{ID: "1", ChannelID: "2", Author: User{ID: "3", Username: "u<3>&"}, Content: `say "hi" <@100>`,
		Mentions: []User{}, MentionRoles: []string{}, Attachments: []Attachment{}, Embeds: []json.RawMessage{}})
	for _, e := range []event{
		{seq: 1, t: "READY", d: json.RawMessage(`{"v":9}`)},
		{seq: 42, t: "MESSAGE_CREATE", d: msg},
		{seq: 1 << 40, t: "RESUMED", d: json.RawMessage(`{}`)},
	} {
		seq, typ := e.seq, e.t
		want, err := json.Marshal(gatewayPayload{Op: opDispatch, D: e.d, S: &seq, T: &typ})
		if err != nil {
			t.Fatal(err)
		}
		if got := dispatchFrame(e); !bytes.Equal(got, want) {
			t.Errorf("dispatchFrame(%s #%d)\n got %s\nwant %s", e.t, e.seq, got, want)
		}
	}
}

// TestCompressedPayloadsInflateOneByOne: a reused compressor still makes
// every payload a zlib stream of its own, as discordgo reads them.
func TestCompressedPayloadsInflateOneByOne(t *testing.T) {
	var pc payloadCompressor
	for _, p := range []string{`{"op":10,"d":{"heartbeat_interval":41250}}`, `{"op":0,"d":{"content":"q1x2z"},"s":2,"t":"MESSAGE_CREATE"}`, `{}`} {
		z, err := zlib.NewReader(bytes.NewReader(pc.compress([]byte(p))))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		got, err := io.ReadAll(z)
		if err != nil || string(got) != p {
			t.Errorf("inflated %q (%v), want %q", got, err, p)
		}
	}
}
