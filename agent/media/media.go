// Package media turns a chat message's attachments into model input
// (issue 32): voice notes and audio are transcribed through an
// OpenAI-compatible /v1/audio/transcriptions endpoint (media.transcription),
// documents (PDF, DOCX, HTML, plain text, Markdown, CSV, JSON) have their
// text extracted, and answers can be spoken through /v1/audio/speech
// (media.speech, Speaker).
//
// Processor implements agent.MediaPreparer. For each attachment of a turn:
//
//   - The kind is read from the bytes, not from the name or the platform's
//     MIME type (Sniff): a "report.pdf" that is really a PNG is treated as an
//     image and the model is told the name lied. Images go to the model
//     unchanged (the agent sends them as data URLs).
//   - Audio is bounded (media.max_audio bytes; media.max_audio_duration, read
//     from the OGG or WAV container itself, so a platform's claim is not
//     trusted), then transcribed. The transcript joins the user's words,
//     marked as transcribed, so the session keeps it; the audio file is saved
//     in the chat's workspace.
//   - Documents are extracted within bounds (media.max_document_pages, a
//     character bound, a wall-clock deadline; a parser panic on a hostile
//     file is recovered) and the model sees an excerpt plus the workspace
//     paths of the original and of the whole extracted text, which read_file
//     reaches. A PDF without a text layer (a scan) says so.
//   - Anything that cannot be used — transcription not configured, a bound
//     exceeded, unreadable audio, a failing endpoint, a broken document — is
//     a Notice: one line the agent adds to the turn's answer, naming the
//     config key to set where there is one. The turn is still answered and
//     nothing is lost (the message stays in the inbox until the turn is
//     committed; a replayed turn prepares its attachments again).
//
// Errors and notices never carry the endpoint's API key.
package media

import (
	"fmt"
	"time"
)

// Config keys as the operator writes them (config.yaml media:).
const (
	KeyTranscriptionURL = "media.transcription.base_url"
	KeySpeechURL        = "media.speech.base_url"
	KeyMaxAudio         = "media.max_audio"
	KeyMaxAudioDuration = "media.max_audio_duration"
	KeyMaxPages         = "media.max_document_pages"
	KeyMaxUpload        = "media.max_upload"
)

// Defaults (DESIGN.md §9).
const (
	DefaultMaxAudio         = 20 << 20
	DefaultMaxAudioDuration = 10 * time.Minute
	DefaultMaxPages         = 200
	DefaultMaxUpload        = 25 << 20
	// DefaultMaxChars bounds the text extracted from one document (the
	// whole text saved in the workspace).
	DefaultMaxChars = 1 << 20
	// DefaultExcerptChars is how much of a document the model sees inline.
	DefaultExcerptChars = 6000
	// DefaultExtractTimeout bounds one document's extraction.
	DefaultExtractTimeout = 20 * time.Second
	// DefaultTranscribeTimeout bounds one transcription call.
	DefaultTranscribeTimeout = 2 * time.Minute
)

// Endpoint is an OpenAI-compatible audio endpoint. BaseURL goes up to and
// including /v1.
type Endpoint struct {
	BaseURL  string
	APIKey   string
	Model    string
	Language string // transcription: ISO-639-1 hint, "" = detect
	Voice    string // speech
}

// Configured reports whether the endpoint has a base URL.
func (e Endpoint) Configured() bool { return e.BaseURL != "" }

// Config is the media section, resolved.
type Config struct {
	Transcription    Endpoint
	Speech           Endpoint
	MaxAudio         int64
	MaxAudioDuration time.Duration
	MaxDocumentPages int
	MaxUpload        int64
	// MaxChars bounds a document's extracted text; ExcerptChars the part
	// shown inline. ExtractTimeout and TranscribeTimeout bound the work.
	MaxChars          int
	ExcerptChars      int
	ExtractTimeout    time.Duration
	TranscribeTimeout time.Duration
}

// WithDefaults returns c with zero bounds set to the defaults.
func (c Config) WithDefaults() Config {
	if c.MaxAudio <= 0 {
		c.MaxAudio = DefaultMaxAudio
	}
	if c.MaxAudioDuration <= 0 {
		c.MaxAudioDuration = DefaultMaxAudioDuration
	}
	if c.MaxDocumentPages <= 0 {
		c.MaxDocumentPages = DefaultMaxPages
	}
	if c.MaxUpload <= 0 {
		c.MaxUpload = DefaultMaxUpload
	}
	if c.MaxChars <= 0 {
		c.MaxChars = DefaultMaxChars
	}
	if c.ExcerptChars <= 0 {
		c.ExcerptChars = DefaultExcerptChars
	}
	if c.ExtractTimeout <= 0 {
		c.ExtractTimeout = DefaultExtractTimeout
	}
	if c.TranscribeTimeout <= 0 {
		c.TranscribeTimeout = DefaultTranscribeTimeout
	}
	if c.Transcription.Model == "" {
		c.Transcription.Model = "whisper-1"
	}
	return c
}

// sizeText renders a byte count as people read it ("20 MiB", "1.5 KiB").
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return trimUnit(float64(n)/(1<<30), "GiB")
	case n >= 1<<20:
		return trimUnit(float64(n)/(1<<20), "MiB")
	case n >= 1<<10:
		return trimUnit(float64(n)/(1<<10), "KiB")
	}
	return fmt.Sprintf("%d bytes", n)
}

func trimUnit(v float64, unit string) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), unit)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

// durationText renders a duration as m:ss.
func durationText(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
