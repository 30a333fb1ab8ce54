package daemon_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketranscribe"
)

// speak makes a real Telegram-style voice note (OGG/Opus, mono, 48 kHz)
// with espeak-ng and ffmpeg; skipped without them (.ci/run installs them).
func speak(t *testing.T, text string) []byte {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "ffmpeg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install -y espeak-ng ffmpeg)", tool)
		}
	}
	dir := t.TempDir()
	wav, ogg := filepath.Join(dir, "s.wav"), filepath.Join(dir, "v.ogg")
	if out, err := exec.Command("espeak-ng", "-w", wav, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v %s", err, out)
	}
	if out, err := exec.Command("ffmpeg", "-v", "error", "-y", "-i", wav, "-c:a", "libopus", "-b:a", "24k",
		"-ar", "48000", "-ac", "1", ogg).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	data, err := os.ReadFile(ogg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Issue 32: a Telegram voice note is heard. Transcribed, the model answers
// the words; without media.transcription the answer says which key to set.
func TestTelegramVoiceNoteIsHeard(t *testing.T) {
	ogg := speak(t, "remind me to buy milk")
	t.Run("transcribed", func(t *testing.T) {
		llm := fakellm.Start(t, fakellm.Text("I will remind you to buy milk."))
		tr := faketranscribe.Start(t, "sk-transcribe-SECRET", faketranscribe.Text("remind me to buy milk"), nil)
		tg := faketelegram.New(t, faketelegram.Options{})
		cfg := telegramConfig(t, llm, tg)
		cfg.Media.Transcription.BaseURL = tr.URL
		cfg.Media.Transcription.APIKey = config.NewSecret("sk-transcribe-SECRET")
		startDaemon(t, cfg, tg.Token())

		tg.UserSendsVoice(tgUser, ogg, 2)
		tgWaitText(t, tg, tgUser, 1, is("I will remind you to buy milk."))
		if got := llm.LastRequest().LastUserText(); !strings.Contains(got, "transcribed by speech recognition") ||
			!strings.HasSuffix(got, "remind me to buy milk") {
			t.Errorf("model saw %q", got)
		}
		if n := len(tr.Transcriptions()); n != 1 {
			t.Errorf("%d transcriptions, want 1", n)
		}
	})
	t.Run("not configured", func(t *testing.T) {
		llm := fakellm.Start(t, fakellm.Text("I could not hear it."))
		tg := faketelegram.New(t, faketelegram.Options{})
		startDaemon(t, telegramConfig(t, llm, tg), tg.Token())

		tg.UserSendsVoice(tgUser, ogg, 2)
		tgWaitText(t, tg, tgUser, 1, has("I could not hear it.", "set media.transcription.base_url"))
	})
}
