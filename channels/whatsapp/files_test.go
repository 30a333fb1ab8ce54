package whatsapp

import (
	"bytes"
	"context"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakewhatsapp"
)

// TestSendFileUploadsThenSends: a file is uploaded as media and sent as a
// document (a small JPEG as an image) naming it, with its file name and
// caption; outside the 24-hour window it is refused permanently.
func TestSendFileUploadsThenSends(t *testing.T) {
	fake, a, _, _ := running(t, fakewhatsapp.Options{})
	user := ada
	tg := channels.Target{Channel: Name, ChatID: "+" + user.WaID}
	if _, err := a.SendFile(context.Background(), channels.OutgoingFile{Target: tg, Name: "a.pdf", MIME: "application/pdf",
		Data: []byte("%PDF")}); err == nil {
		t.Fatal("a file to a user who never wrote was sent; WhatsApp refuses it (131047)")
	} else if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent {
		t.Errorf("outside the window: %v (%s), want permanent", err, kind)
	}
	fake.UserSays(t, user, "hello")
	cases := []struct{ name, mime, caption, typ string }{
		{"report.pdf", "application/pdf", "Q3 report", "document"},
		{"photo.jpg", "image/jpeg", "", "image"},
	}
	for i, tc := range cases {
		data := []byte("bytes of " + tc.name)
		id, err := a.SendFile(context.Background(), channels.OutgoingFile{Target: tg, Name: tc.name, MIME: tc.mime, Data: data,
			Caption: tc.caption, Nonce: "in-1/file"})
		if err != nil {
			t.Fatalf("SendFile %s: %v", tc.name, err)
		}
		files := fake.Files(user.WaID)
		if len(files) != i+1 {
			t.Fatalf("WhatsApp got %d files, want %d", len(files), i+1)
		}
		f := files[i]
		wantName := tc.name
		if tc.typ == "image" {
			wantName = "" // images carry no file name
		}
		if f.ID != id || f.Type != tc.typ || f.Filename != wantName || f.Caption != tc.caption || f.MIME != tc.mime ||
			!bytes.Equal(f.Data, data) {
			t.Errorf("sent %+v (%q), want a %s %s", f.Sent, f.Data, tc.typ, tc.name)
		}
	}
}

// Files implements channeltest.FileDriver.
func (d *waDriver) Files(tg channels.Target) []channeltest.SentFile {
	var out []channeltest.SentFile
	for _, f := range d.fake.Files(tg.ChatID) {
		out = append(out, channeltest.SentFile{Name: f.Filename, Data: f.Data, Caption: f.Caption})
	}
	return out
}
