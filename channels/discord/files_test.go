package discord

import (
	"bytes"
	"context"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

// TestSendFileAttachesOnceByNonce: a file reaches Discord as an attachment
// with its name, bytes and the caption as the message text; sending it
// again with the same nonce (a resend after a crash) returns the same
// message and attaches nothing new.
func TestSendFileAttachesOnceByNonce(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
	fake.AddChannel(guildID, chanID, "general")
	ch, _ := newChannel(t, fake, nil)
	f := channels.OutgoingFile{Target: channels.Target{Channel: "discord", ChatID: chanID}, Name: "report.pdf",
		MIME: "application/pdf", Data: []byte("%PDF-1.4 the report"), Caption: "Q3 report", Nonce: "in-7/1048576"}
	id, err := ch.SendFile(context.Background(), f)
	if err != nil {
		t.Fatalf("SendFile: %v", err)
	}
	again, err := ch.SendFile(context.Background(), f)
	if err != nil {
		t.Fatalf("SendFile again: %v", err)
	}
	ups := fake.Uploads(chanID)
	if len(ups) != 1 {
		t.Fatalf("the fake got %d uploads, want 1", len(ups))
	}
	u := ups[0]
	if u.Name != "report.pdf" || !bytes.Equal(u.Data, f.Data) || u.Content != "Q3 report" || u.MIME != "application/pdf" {
		t.Errorf("upload = %s %q %q %s, want report.pdf with the bytes, the caption and application/pdf", u.Name, u.Data, u.Content, u.MIME)
	}
	if id != u.MessageID || again != id {
		t.Errorf("ids = %q then %q, want the message %q both times", id, again, u.MessageID)
	}
}

// TestSendFileTooLargeIsPermanent: Discord's 413 is not retried.
func TestSendFileTooLargeIsPermanent(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
	fake.AddChannel(guildID, chanID, "general")
	ch, _ := newChannel(t, fake, nil)
	_, err := ch.SendFile(context.Background(), channels.OutgoingFile{Target: channels.Target{Channel: "discord", ChatID: chanID},
		Name: "big.bin", MIME: "application/octet-stream", Data: make([]byte, MaxUpload+1)})
	if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent {
		t.Errorf("oversized file: %v (%s), want permanent", err, kind)
	}
}

// Files implements channeltest.FileDriver.
func (d *dcDriver) Files(tg channels.Target) []channeltest.SentFile {
	var out []channeltest.SentFile
	for _, u := range d.fake.Uploads(postChannel(tg)) {
		out = append(out, channeltest.SentFile{Name: u.Name, Data: u.Data, Caption: u.Content})
	}
	return out
}
