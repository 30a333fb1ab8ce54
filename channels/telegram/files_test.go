package telegram

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// TestSendFileUploads: a file reaches Telegram as a multipart upload — a
// PNG as a photo, anything else (and an image over the photo limit) as a
// document — with its name, bytes and caption, and the id points at the
// message the fake stored.
func TestSendFileUploads(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 100)...)
	cases := []struct {
		name, file, mime string
		data             []byte
		caption          string
		method           string
	}{
		{"a document", "report.pdf", "application/pdf", []byte("%PDF-1.4 report"), "Q3 report", "sendDocument"},
		{"an image as a photo", "chart.png", "image/png", png, "the chart", "sendPhoto"},
		{"an image over the photo limit as a document", "huge.png", "image/png",
			append(png, make([]byte, MaxPhotoSize)...), "", "sendDocument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
			id, err := r.ch.SendFile(context.Background(), channels.OutgoingFile{
				Target: channels.Target{Channel: "telegram", ChatID: "42"}, Name: tc.file, MIME: tc.mime,
				Data: tc.data, Caption: tc.caption})
			if err != nil {
				t.Fatalf("SendFile: %v", err)
			}
			ups := r.fake.Uploads(42)
			if len(ups) != 1 {
				t.Fatalf("the fake got %d uploads, want 1", len(ups))
			}
			u := ups[0]
			if u.Method != tc.method || u.Name != tc.file || !bytes.Equal(u.Data, tc.data) || u.Caption != tc.caption {
				t.Errorf("upload = %s %s (%d bytes) %q, want %s %s (%d bytes) %q", u.Method, u.Name, len(u.Data), u.Caption,
					tc.method, tc.file, len(tc.data), tc.caption)
			}
			if want := fmt.Sprintf("42:%d", u.MessageID); id != want {
				t.Errorf("id = %q, want %q", id, want)
			}
		})
	}
}

// TestSendFileErrorsAreClassified: a chat that blocked the bot is a
// permanent failure; a file over 50 MB is refused before any upload.
func TestSendFileErrorsAreClassified(t *testing.T) {
	r := newRig(t, nil)
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	r.fake.Block(42)
	_, err := r.ch.SendFile(context.Background(), channels.OutgoingFile{
		Target: channels.Target{Channel: "telegram", ChatID: "42"}, Name: "a.txt", MIME: "text/plain", Data: []byte("a")})
	if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent {
		t.Errorf("blocked chat: %v (%s), want permanent", err, kind)
	}
	_, err = r.ch.SendFile(context.Background(), channels.OutgoingFile{
		Target: channels.Target{Channel: "telegram", ChatID: "42"}, Name: "big.bin", MIME: "application/octet-stream",
		Data: make([]byte, MaxFileSize+1)})
	if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent {
		t.Errorf("oversized file: %v (%s), want permanent", err, kind)
	}
	if n := len(r.fake.Requests("sendDocument")); n != 1 {
		t.Errorf("%d sendDocument requests, want 1 (the oversized file is not uploaded)", n)
	}
}

// Files implements channeltest.FileDriver.
func (d *tgDriver) Files(tg channels.Target) []channeltest.SentFile {
	id, err := strconv.ParseInt(tg.ChatID, 10, 64)
	if err != nil {
		return nil
	}
	var out []channeltest.SentFile
	for _, u := range d.fake.Uploads(id) {
		out = append(out, channeltest.SentFile{Name: u.Name, Data: u.Data, Caption: u.Caption})
	}
	return out
}
