package telegram

import (
	"bytes"
	"strings"
	"testing"
)

// TestVoiceAudioAndDocumentsArrive: a voice note, an audio file and a
// document of any type reach Message.Media with their bytes (before issue 32
// only images did; a voice note was ignored as a message without text).
func TestVoiceAudioAndDocumentsArrive(t *testing.T) {
	ogg := append([]byte("OggS"), bytes.Repeat([]byte{7}, 3000)...)
	pdf := []byte("%PDF-1.4\n% a document\n")
	cases := []struct {
		name     string
		send     func(r *rig)
		wantMIME string
		wantName string
		wantData []byte
	}{
		{"voice note", func(r *rig) { r.fake.UserSendsVoice(42, ogg, 3) }, "audio/ogg", "voice.ogg", ogg},
		{"pdf document", func(r *rig) { r.fake.UserSendsDocument(42, pdf, "report.pdf", "application/pdf", "", 0) }, "application/pdf", "report.pdf", pdf},
		{"csv document", func(r *rig) {
			r.fake.UserSendsDocument(42, []byte("a,b\n1,2\n"), "data.csv", "text/csv", "sum it", 0)
		}, "text/csv", "data.csv", []byte("a,b\n1,2\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			tc.send(r)
			m := r.rec.wait(t, 1)[0]
			if len(m.Media) != 1 {
				t.Fatalf("media = %d items, text %q; want the attachment", len(m.Media), m.Text)
			}
			got := m.Media[0]
			if got.MIME != tc.wantMIME || got.Name != tc.wantName || !bytes.Equal(got.Data, tc.wantData) {
				t.Errorf("media = {%s %s %d bytes}, want {%s %s %d bytes}", got.MIME, got.Name, len(got.Data), tc.wantMIME, tc.wantName, len(tc.wantData))
			}
		})
	}
}

// TestAnnouncedHugeFileIsNeverDownloaded: a 2 GB upload as Telegram
// announces it is not fetched at all, and the message says why instead of
// vanishing.
func TestAnnouncedHugeFileIsNeverDownloaded(t *testing.T) {
	r := newRig(t, nil)
	r.fake.UserSendsDocument(42, []byte("tiny stand-in"), "film.mkv", "video/x-matroska", "", 2<<30)
	m := r.rec.wait(t, 1)[0]
	if len(m.Media) != 0 {
		t.Fatalf("media = %+v, want none", m.Media)
	}
	for _, want := range []string{`the document "film.mkv" was not downloaded`, "2.0 GiB", "channels.telegram.max_media_bytes"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text %q lacks %q", m.Text, want)
		}
	}
	if n := r.fake.Downloads(); n != 0 {
		t.Errorf("%d downloads, want none", n)
	}
}
