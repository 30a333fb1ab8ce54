package media

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketranscribe"
)

const transcribeKey = "sk-transcribe-SECRET-42"

func TestVoiceNoteTranscribed(t *testing.T) {
	ogg := voiceNote(t, "hello switchboard", 0)
	fake := faketranscribe.Start(t, transcribeKey, faketranscribe.Text("hello switchboard"), nil)
	p := New(Config{Transcription: Endpoint{BaseURL: fake.URL, APIKey: transcribeKey, Model: "whisper-1", Language: "en"}}, fake.HTTPClient(), nil)
	ws := newWorkspace()

	out := p.PrepareMedia(context.Background(), []agent.Media{{MIME: "audio/ogg", Name: "voice.ogg", Data: ogg}}, ws.save)

	if len(out.Notices) != 0 {
		t.Errorf("notices %q, want none", out.Notices)
	}
	if !out.Spoke {
		t.Error("Spoke = false after a transcribed voice note")
	}
	path, saved := ws.find("-voice.ogg")
	if !bytes.Equal(saved, ogg) || !strings.HasPrefix(path, "attachments/") {
		t.Errorf("workspace has %q (%d bytes), want the voice note under attachments/", path, len(saved))
	}
	if !strings.Contains(out.Text, "transcribed by speech recognition; saved as "+path+"]\nhello switchboard") ||
		!strings.HasPrefix(out.Text, "[voice note 0:0") {
		t.Errorf("model text %q: want the transcript marked as transcribed, with its length and path", out.Text)
	}
	reqs := fake.Transcriptions()
	if len(reqs) != 1 {
		t.Fatalf("%d transcription requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "whisper-1" || r.Language != "en" || r.FileName != "voice.ogg" || r.ResponseFormat != "json" ||
		!bytes.Equal(r.Audio, ogg) || r.Auth != "Bearer "+transcribeKey {
		t.Errorf("request = model %q language %q file %q format %q audio %d bytes auth %q",
			r.Model, r.Language, r.FileName, r.ResponseFormat, len(r.Audio), r.Auth)
	}
}

// TestAudioProblemsAnswerClearly: every way a voice note can fail gives one
// clear notice (naming the key to set where there is one), the model is
// told it was not transcribed, the file is still kept, and no secret leaks.
func TestAudioProblemsAnswerClearly(t *testing.T) {
	ogg := voiceNote(t, "hello", 0)
	long := voiceNote(t, "hello", 4)
	cases := []struct {
		name       string
		data       []byte
		cfg        func(c *Config, url string)
		tr         faketranscribe.Transcriber
		wantNotice string
		wantCalls  int
	}{
		{name: "not configured", data: ogg, cfg: func(c *Config, _ string) { c.Transcription.BaseURL = "" },
			wantNotice: "set media.transcription.base_url"},
		{name: "over max_audio", data: ogg, cfg: func(c *Config, _ string) { c.MaxAudio = 1000 },
			wantNotice: "more than media.max_audio allows (1000 bytes)"},
		{name: "over max_audio_duration", data: long, cfg: func(c *Config, _ string) { c.MaxAudioDuration = 2 * time.Second },
			wantNotice: "longer than media.max_audio_duration allows (2s)"},
		{name: "unreadable audio", data: append([]byte("OggS\x00\x02"), bytes.Repeat([]byte{0xAB}, 500)...),
			wantNotice: "the file is not readable audio"},
		{name: "endpoint fails", data: ogg, tr: faketranscribe.Fail(http.StatusServiceUnavailable, "model overloaded"),
			wantNotice: "speech recognition failed (the endpoint answered 503: model overloaded)", wantCalls: 1},
		{name: "endpoint unreachable", data: ogg, cfg: func(c *Config, _ string) { c.Transcription.BaseURL = "http://127.0.0.1:1/v1" },
			wantNotice: "speech recognition failed (the endpoint could not be reached"},
		{name: "wrong key", data: ogg, cfg: func(c *Config, _ string) { c.Transcription.APIKey = "sk-wrong-SECRET" },
			wantNotice: "the endpoint answered 401"},
		{name: "nothing said", data: ogg, tr: faketranscribe.Text("   "),
			wantNotice: "I could not make out any words", wantCalls: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.tr
			if tr == nil {
				tr = faketranscribe.Text("should not be used")
			}
			fake := faketranscribe.Start(t, transcribeKey, tr, nil)
			cfg := Config{Transcription: Endpoint{BaseURL: fake.URL, APIKey: transcribeKey}}
			if tc.cfg != nil {
				tc.cfg(&cfg, fake.URL)
			}
			ws := newWorkspace()
			out := New(cfg, fake.HTTPClient(), nil).PrepareMedia(context.Background(),
				[]agent.Media{{MIME: "audio/ogg", Name: "voice.ogg", Data: tc.data}, {MIME: "audio/ogg", Name: "voice.ogg", Data: tc.data}}, ws.save)
			if len(out.Notices) != 1 || !strings.Contains(out.Notices[0], tc.wantNotice) {
				t.Fatalf("notices %q, want one containing %q", out.Notices, tc.wantNotice)
			}
			all := strings.Join(out.Notices, "\n") + out.Text
			for _, secret := range []string{transcribeKey, "sk-wrong-SECRET"} {
				if strings.Contains(all, secret) {
					t.Errorf("output leaks %q: %s", secret, all)
				}
			}
			if !strings.Contains(out.Text, "not transcribed") || out.Spoke {
				t.Errorf("model text %q (spoke %v): want it told the note was not transcribed", out.Text, out.Spoke)
			}
			if _, saved := ws.find("-voice.ogg"); !bytes.Equal(saved, tc.data) {
				t.Error("the voice note was not kept in the workspace")
			}
			if n := len(fake.Transcriptions()); n != tc.wantCalls*2 && !(tc.wantCalls == 0 && n == 0) {
				t.Errorf("%d transcription calls, want %d", n, tc.wantCalls*2)
			}
		})
	}
}

func TestAudioDurationFromContainer(t *testing.T) {
	short, long := voiceNote(t, "hello switchboard", 0), voiceNote(t, "hello switchboard", 5)
	ds, ok, err := AudioDuration(short)
	if err != nil || !ok {
		t.Fatalf("short: %v %v", ok, err)
	}
	dl, _, _ := AudioDuration(long)
	if ds < 300*time.Millisecond || ds > 5*time.Second {
		t.Errorf("short note lasts %s", ds)
	}
	if diff := dl - ds; diff < 4900*time.Millisecond || diff > 5100*time.Millisecond {
		t.Errorf("5 s of padding read as %s (%s vs %s)", diff, dl, ds)
	}
	dir := t.TempDir()
	wav := filepath.Join(dir, "s.wav")
	if out, err := exec.Command("espeak-ng", "-w", wav, "hello switchboard").CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v %s", err, out)
	}
	data, _ := os.ReadFile(wav)
	dw, ok, err := AudioDuration(data)
	if err != nil || !ok || dw-ds > 100*time.Millisecond || ds-dw > 100*time.Millisecond {
		t.Errorf("wav %s (%v %v) vs ogg %s: want the same length", dw, ok, err, ds)
	}
}
