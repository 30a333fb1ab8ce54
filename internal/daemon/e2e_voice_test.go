package daemon_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/agent/media"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketranscribe"
)

const speechKey = "sk-speech-SECRET-e2e-0123456789"

// Issue 32, voice out: a chat that spoke gets the answer as text and then as
// a voice note (sendVoice, OGG/Opus), each once; a chat that typed gets text
// only; a speech endpoint that is down costs the voice note only (one WARN,
// the text answer stands); a long answer is read up to the bound and says
// the rest is in the text.
func TestTelegramVoiceNoteAnsweredWithVoice(t *testing.T) {
	question := speak(t, "what is on my list")
	const answer = "Your list: **milk** and [bread](https://shop.example/bread)."
	long := strings.Repeat("This sentence is part of a very long answer. ", 120)
	cases := []struct {
		name      string
		answer    string
		typed     bool   // the user types instead of speaking
		speechURL string // "" = the fake; "down" = nothing listens
		texts     int    // text messages (the long answer takes two)
		wantVoice bool
		wantInput func(string) bool // the script the speech endpoint got
	}{
		{name: "spoke", answer: answer, texts: 1, wantVoice: true, wantInput: is("Your list: milk and bread.")},
		{name: "typed", answer: answer, texts: 1, typed: true},
		{name: "speech down", answer: answer, texts: 1, speechURL: "down"},
		{name: "long answer", answer: long, texts: 2, wantVoice: true, wantInput: func(s string) bool {
			return len([]rune(s)) <= media.MaxSpeechChars && strings.HasSuffix(s, ". "+media.SpeechRestNote)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reply := speak(t, "your list is milk and bread")
			llm := fakellm.Start(t, fakellm.Text(c.answer))
			tr := faketranscribe.Start(t, speechKey, faketranscribe.Text("what is on my list"), reply)
			tg := faketelegram.New(t, faketelegram.Options{})
			cfg := telegramConfig(t, llm, tg)
			cfg.Media.Transcription.BaseURL = tr.URL
			cfg.Media.Transcription.APIKey = config.NewSecret(speechKey)
			cfg.Media.Speech.BaseURL = tr.URL
			if c.speechURL == "down" {
				cfg.Media.Speech.BaseURL = "http://127.0.0.1:1/v1"
			}
			cfg.Media.Speech.APIKey = config.NewSecret(speechKey)
			cfg.Media.Speech.Voice = "nova"
			lb := &logBuf{}
			startDaemonWithLog(t, cfg, lb, 0, tg.Token(), speechKey)

			if c.typed {
				tg.UserSays(tgUser, "what is on my list")
			} else {
				tg.UserSendsVoice(tgUser, question, 2)
			}
			textIs := func(s string) bool {
				return strings.HasPrefix(s, "Your list: milk") || strings.HasPrefix(s, "This sentence")
			}
			tgWaitText(t, tg, tgUser, c.texts, textIs)
			want := c.texts
			if c.wantVoice {
				want++
			}
			switch {
			case c.wantVoice:
				sent := tg.WaitSent(t, tgUser, want, waitLong)
				for i, m := range sent {
					if m.Voice != (i == want-1) {
						t.Fatalf("message %d voice=%v: want the text, then the voice note", i+1, m.Voice)
					}
				}
			case c.speechURL == "down":
				eventually(t, "the WARN about the voice reply", func() bool {
					return strings.Contains(lb.String(), `level=WARN msg="voice reply not sent: speech failed; the text answer stands"`)
				})
			}
			settle() // nothing more may arrive
			sent, voices := tg.Sent(tgUser), tg.Voices(tgUser)
			if len(sent) != want || len(voices) != want-c.texts {
				t.Fatalf("%d messages, %d voice notes; want %d, %d", len(sent), len(voices), want, want-c.texts)
			}
			if strings.Count(lb.String(), "voice reply not sent") > 1 {
				t.Errorf("more than one WARN about the voice reply")
			}
			speeches := tr.Speeches()
			if !c.wantVoice {
				if c.speechURL == "" && len(speeches) != 0 {
					t.Errorf("speech asked for a typed message: %+v", speeches)
				}
				return
			}
			if !bytes.Equal(voices[0].Audio, reply) || voices[0].FileName != "answer.ogg" {
				t.Errorf("voice note %q (%d bytes), want the endpoint's OGG/Opus as answer.ogg", voices[0].FileName, len(voices[0].Audio))
			}
			if len(speeches) != 1 || !c.wantInput(speeches[0].Input) || speeches[0].Voice != "nova" ||
				speeches[0].ResponseFormat != "opus" {
				t.Errorf("speech requests %+v", speeches)
			}
		})
	}
}
