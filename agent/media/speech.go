package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// Voice out (issue 32): a chat that spoke gets its answer as a voice note
// too. The Speaker turns the answer into a script — plain words, no
// Markdown, code left to the text, at most MaxSpeechChars characters, a
// longer answer cut at a sentence and ended with SpeechRestNote — and has it
// read by an OpenAI-compatible /v1/audio/speech endpoint (media.speech) as
// OGG/Opus, the format Telegram plays as a voice note. The text answer is
// always delivered as well; the voice note is an extra.

// Speech defaults and bounds.
const (
	// MaxSpeechChars bounds the script sent to the speech endpoint (OpenAI's
	// limit is 4,096 characters).
	MaxSpeechChars = 4000
	// SpeechRestNote ends the script of an answer longer than the bound.
	SpeechRestNote = "(the rest is in the text)"
	// DefaultSpeechModel and DefaultSpeechVoice are used when media.speech
	// leaves them empty.
	DefaultSpeechModel = "tts-1"
	DefaultSpeechVoice = "alloy"
	// DefaultSpeakTimeout bounds one speech call.
	DefaultSpeakTimeout = time.Minute
	// maxSpeechAudio bounds the audio read back (a voice note of 4,000
	// characters is about 1 MB of Opus).
	maxSpeechAudio = 20 << 20
)

// Speaker reads answers aloud through media.speech.
type Speaker struct {
	ep      Endpoint
	client  *openai.Client
	timeout time.Duration
}

// NewSpeaker returns a Speaker for cfg.Speech, or nil when media.speech has
// no base_url (no voice replies). hc, if set, is its HTTP client.
func NewSpeaker(cfg Config, hc *http.Client) *Speaker {
	ep := cfg.Speech
	if !ep.Configured() {
		return nil
	}
	if ep.Model == "" {
		ep.Model = DefaultSpeechModel
	}
	if ep.Voice == "" {
		ep.Voice = DefaultSpeechVoice
	}
	oc := openai.DefaultConfig(ep.APIKey)
	oc.BaseURL = strings.TrimRight(ep.BaseURL, "/")
	if hc != nil {
		oc.HTTPClient = hc
	}
	return &Speaker{ep: ep, client: openai.NewClientWithConfig(oc), timeout: DefaultSpeakTimeout}
}

// Script is what the voice note says for answer (SpeechScript with
// MaxSpeechChars); "" when there is nothing to say.
func (s *Speaker) Script(answer string) string { return SpeechScript(answer, MaxSpeechChars) }

// Speak has script read aloud and returns the OGG/Opus audio. Errors name
// the endpoint's answer, never its key.
func (s *Speaker) Speak(ctx context.Context, script string) ([]byte, error) {
	if strings.TrimSpace(script) == "" {
		return nil, errors.New("speech: nothing to say")
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	resp, err := s.client.CreateSpeech(ctx, openai.CreateSpeechRequest{
		Model:          openai.SpeechModel(s.ep.Model),
		Input:          script,
		Voice:          openai.SpeechVoice(s.ep.Voice),
		ResponseFormat: openai.SpeechResponseFormatOpus,
	})
	if err != nil {
		return nil, fmt.Errorf("speech: %w", endpointError(err, s.ep.APIKey))
	}
	defer func() { _ = resp.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp, maxSpeechAudio+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("speech: %w", endpointError(err, s.ep.APIKey))
	case len(data) > maxSpeechAudio:
		return nil, fmt.Errorf("speech: the endpoint answered more than %s of audio", sizeText(maxSpeechAudio))
	case !bytes.HasPrefix(data, []byte("OggS")):
		return nil, fmt.Errorf("speech: the endpoint answered %s (%s), not OGG/Opus audio", sizeText(int64(len(data))),
			clipText(resp.Header().Get("Content-Type"), 60))
	}
	return data, nil
}

var (
	fenceRE   = regexp.MustCompile("(?s)```.*?(```|$)")
	imageRE   = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	linkRE    = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	emphRE    = regexp.MustCompile(`(\*\*|__|~~|\*|` + "`" + `)`)
	headingRE = regexp.MustCompile(`(?m)^[ \t]{0,3}(#{1,6}|>+|[-*+]|\d+[.)])[ \t]+`)
	spacesRE  = regexp.MustCompile(`[ \t]+`)
	blanksRE  = regexp.MustCompile(`\n{3,}`)
)

// SpeechScript turns a Markdown answer into words to read aloud: code blocks
// become "(code in the text)", links their text, Markdown markers go; at
// most max characters, a longer answer cut after a sentence (or a word) and
// ended with SpeechRestNote.
func SpeechScript(answer string, max int) string {
	s := fenceRE.ReplaceAllString(answer, "(code in the text)")
	s = imageRE.ReplaceAllString(s, "$1")
	s = linkRE.ReplaceAllString(s, "$1")
	s = headingRE.ReplaceAllString(s, "")
	s = emphRE.ReplaceAllString(s, "")
	s = spacesRE.ReplaceAllString(s, " ")
	s = blanksRE.ReplaceAllString(strings.TrimSpace(s), "\n\n")
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	room := max - utf8.RuneCountInString(SpeechRestNote) - 1
	if room <= 0 {
		return SpeechRestNote
	}
	head := string([]rune(s)[:room])
	cut := -1
	for _, sep := range []string{". ", "! ", "? ", ".\n", "!\n", "?\n", "\n"} {
		if i := strings.LastIndex(head, sep); i > cut {
			cut = i + 1
		}
	}
	if cut < len(head)/2 { // no sentence end in the second half: cut at a word
		if i := strings.LastIndexAny(head, " \n"); i > len(head)/2 {
			cut = i
		} else {
			cut = len(head)
		}
	}
	return strings.TrimSpace(head[:cut]) + " " + SpeechRestNote
}
