package media

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/internal/testkit/faketranscribe"
)

const speechKey = "sk-speech-SECRET-7"

func TestSpeechScript(t *testing.T) {
	long := strings.Repeat("The weather is fine today. ", 200) // 5,400 characters
	cases := []struct {
		name, in string
		want     string // exact, unless prefix is set
		prefix   bool
	}{
		{name: "plain", in: "Buy milk at six.", want: "Buy milk at six."},
		{name: "markdown", in: "## Plan\n\n- **Buy** the _milk_\n- see [the list](https://x.example/l)\n\n```go\nfmt.Println(1)\n```\nDone `now`.",
			want: "Plan\n\nBuy the _milk_\nsee the list\n\n(code in the text)\nDone now."},
		{name: "long", in: long, want: strings.Repeat("The weather is fine today. ", 147)[:147*27-1] + " " + SpeechRestNote},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := SpeechScript(c.in, MaxSpeechChars)
			if got != c.want {
				t.Errorf("script:\n%q\nwant\n%q", got, c.want)
			}
			if n := utf8.RuneCountInString(got); n > MaxSpeechChars {
				t.Errorf("%d characters, over %d", n, MaxSpeechChars)
			}
		})
	}
}

func TestSpeakerReadsAloud(t *testing.T) {
	ogg := []byte("OggS\x00\x02fake-opus-page")
	fake := faketranscribe.Start(t, speechKey, faketranscribe.Text(""), ogg)
	sp := NewSpeaker(Config{Speech: Endpoint{BaseURL: fake.URL, APIKey: speechKey}}, fake.HTTPClient())
	got, err := sp.Speak(context.Background(), "Buy milk at six.")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, ogg) {
		t.Errorf("audio %q, want the endpoint's", got)
	}
	reqs := fake.Speeches()
	if len(reqs) != 1 || reqs[0].Input != "Buy milk at six." || reqs[0].Model != DefaultSpeechModel ||
		reqs[0].Voice != DefaultSpeechVoice || reqs[0].ResponseFormat != "opus" || reqs[0].Auth != "Bearer "+speechKey {
		t.Errorf("requests %+v", reqs)
	}
	if NewSpeaker(Config{}, nil) != nil {
		t.Error("a Speaker without media.speech.base_url")
	}
}

func TestSpeakerFailuresAreClear(t *testing.T) {
	fake := faketranscribe.Start(t, speechKey, faketranscribe.Text(""), []byte("ID3 an mp3"))
	cases := []struct {
		name, url, key, want string
	}{
		{name: "wrong key", url: fake.URL, key: "sk-wrong-SECRET", want: "the endpoint answered 401"},
		{name: "not ogg", url: fake.URL, key: speechKey, want: "not OGG/Opus audio"},
		{name: "down", url: "http://127.0.0.1:1/v1", key: speechKey, want: "could not be reached"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := NewSpeaker(Config{Speech: Endpoint{BaseURL: c.url, APIKey: c.key}}, fake.HTTPClient())
			_, err := sp.Speak(context.Background(), "hello")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the key leaked: %v", err)
			}
		})
	}
}
