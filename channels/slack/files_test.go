package slack

import (
	"bytes"
	"context"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

// TestSendFileExternalUpload: a file reaches Slack through the external
// upload flow — shared into the channel (and thread) with its name, bytes
// and the caption as the initial comment; the id is the file's.
func TestSendFileExternalUpload(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())
	data := []byte("region,total\nnorth,42\n")
	target := channels.Target{Channel: "slack", ChatID: "C200", ThreadID: "1700000000.000100"}
	id, err := r.c.SendFile(context.Background(), channels.OutgoingFile{Target: target, Name: "q3.csv", MIME: "text/csv",
		Data: data, Caption: "the Q3 numbers"})
	if err != nil {
		t.Fatalf("SendFile: %v", err)
	}
	ups := f.Uploads("C200")
	if len(ups) != 1 {
		t.Fatalf("Slack got %d shared files, want 1", len(ups))
	}
	u := ups[0]
	if u.Name != "q3.csv" || !bytes.Equal(u.Data, data) || u.Comment != "the Q3 numbers" || u.ThreadTS != target.ThreadID || u.FileID != id {
		t.Errorf("shared = %+v, want q3.csv with the bytes, the caption, in the thread, id %s", u, id)
	}
}

// TestSendFileFailuresAreClassified: a refused share (the bot is not in the
// channel) is permanent; an empty file is refused before any call.
func TestSendFileFailuresAreClassified(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())
	f.FailNext("files.completeUploadExternal", 1, "not_in_channel", 200)
	target := channels.Target{Channel: "slack", ChatID: "C300"}
	_, err := r.c.SendFile(context.Background(), channels.OutgoingFile{Target: target, Name: "a.txt", MIME: "text/plain", Data: []byte("a")})
	if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent {
		t.Errorf("not_in_channel: %v (%s), want permanent", err, kind)
	}
	_, err = r.c.SendFile(context.Background(), channels.OutgoingFile{Target: target, Name: "empty.txt", MIME: "text/plain", Data: nil})
	if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent {
		t.Errorf("empty file: %v (%s), want permanent", err, kind)
	}
	if n := f.Calls("files.getUploadURLExternal"); n != 1 {
		t.Errorf("%d upload URL requests, want 1 (none for the empty file)", n)
	}
	if len(f.Uploads("")) != 0 {
		t.Errorf("files were shared: %+v", f.Uploads(""))
	}
}

// Files implements channeltest.FileDriver.
func (d slDriver) Files(tg channels.Target) []channeltest.SentFile {
	var out []channeltest.SentFile
	for _, u := range d.fake.Uploads(tg.ChatID) {
		if u.ThreadTS == tg.ThreadID {
			out = append(out, channeltest.SentFile{Name: u.Name, Data: u.Data, Caption: u.Comment})
		}
	}
	return out
}
