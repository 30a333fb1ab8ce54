package matrix

import (
	"bytes"
	"context"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
)

// TestSendFileUploadsThenPostsOnce: a file is uploaded to the media
// repository and posted as an m.file (an image as an m.image) naming it,
// with the caption as its body; sent again with the same nonce (a resend
// after a crash) it is the same event, not a second one.
func TestSendFileUploadsThenPostsOnce(t *testing.T) {
	a, fake := newSender(t)
	cases := []struct {
		name, file, mime, caption, msgtype, body string
		nonce                                    string
	}{
		{"a document", "report.pdf", "application/pdf", "Q3 report", "m.file", "Q3 report", "in-3/1048576"},
		{"an image, no caption", "chart.png", "image/png", "", "m.image", "chart.png", "in-3/1048577"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte("bytes of " + tc.file)
			f := channels.OutgoingFile{Target: channels.Target{Channel: Name, ChatID: dmRoom}, Name: tc.file, MIME: tc.mime,
				Data: data, Caption: tc.caption, Nonce: tc.nonce}
			id1, err := a.SendFile(context.Background(), f)
			if err != nil {
				t.Fatalf("SendFile: %v", err)
			}
			id2, err := a.SendFile(context.Background(), f)
			if err != nil || id2 != id1 {
				t.Errorf("resend: %q %v, want the same event %q", id2, err, id1)
			}
			files := fake.Files(dmRoom)
			if len(files) != i+1 {
				t.Fatalf("the room shows %d files, want %d", len(files), i+1)
			}
			got := files[i]
			if got.EventID != id1 || got.MsgType != tc.msgtype || got.Body != tc.body || got.FileName != tc.file ||
				got.MIME != tc.mime || got.Size != len(data) || !bytes.Equal(got.Data, data) {
				t.Errorf("posted %+v", got)
			}
		})
	}
}

// Files implements channeltest.FileDriver.
func (d *mxDriver) Files(tg channels.Target) []channeltest.SentFile {
	var out []channeltest.SentFile
	for _, f := range d.fake.Files(tg.ChatID) {
		caption := f.Body
		if caption == f.FileName {
			caption = ""
		}
		out = append(out, channeltest.SentFile{Name: f.FileName, Data: f.Data, Caption: caption})
	}
	return out
}
