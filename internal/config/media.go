package config

import "time"

// Media is the media section: voice notes and documents in, voice out
// (package agent/media; README "Voice notes and documents"). Key names are
// DESIGN §9's.
type Media struct {
	// Transcription is the OpenAI-compatible /v1/audio/transcriptions
	// endpoint voice notes go to (whisper.cpp's server, faster-whisper
	// servers, Groq, OpenAI); an empty base_url = voice notes are not
	// transcribed, and the answer says which key to set.
	Transcription MediaTranscription `yaml:"transcription"`
	// Speech is the OpenAI-compatible /v1/audio/speech endpoint; an empty
	// base_url = no voice replies.
	Speech MediaSpeech `yaml:"speech"`
	// MaxAudio bounds one voice note or audio file (20MiB).
	MaxAudio Size `yaml:"max_audio"`
	// MaxAudioDuration bounds its length, read from the file (10m).
	MaxAudioDuration time.Duration `yaml:"max_audio_duration"`
	// MaxDocumentPages is how many pages of a PDF are read (200).
	MaxDocumentPages int `yaml:"max_document_pages"`
	// MaxUpload bounds one document (25MiB).
	MaxUpload Size `yaml:"max_upload"`
}

// MediaTranscription is media.transcription.
type MediaTranscription struct {
	BaseURL  string `yaml:"base_url"` // up to and including /v1
	APIKey   Secret `yaml:"api_key"`
	Model    string `yaml:"model"`    // whisper-1
	Language string `yaml:"language"` // ISO-639-1 hint; "" = detect
}

// MediaSpeech is media.speech.
type MediaSpeech struct {
	BaseURL string `yaml:"base_url"` // up to and including /v1
	APIKey  Secret `yaml:"api_key"`
	Model   string `yaml:"model"` // "" = tts-1
	Voice   string `yaml:"voice"` // "" = alloy
}

// DefaultMedia is the media section's defaults (DESIGN.md §9).
func DefaultMedia() Media {
	return Media{
		Transcription:    MediaTranscription{Model: "whisper-1"},
		MaxAudio:         20 << 20,
		MaxAudioDuration: 10 * time.Minute,
		MaxDocumentPages: 200,
		MaxUpload:        25 << 20,
	}
}

// media checks the media section.
func (v *validator) media() {
	m := v.c.Media
	if m.MaxAudio < 1 {
		v.fail("media.max_audio", "must be a size of at least 1 byte, got %d", int64(m.MaxAudio))
	}
	v.positiveDur("media.max_audio_duration", m.MaxAudioDuration)
	v.positive("media.max_document_pages", m.MaxDocumentPages)
	if m.MaxUpload < 1 {
		v.fail("media.max_upload", "must be a size of at least 1 byte, got %d", int64(m.MaxUpload))
	}
	if m.Transcription.BaseURL != "" && m.Transcription.Model == "" {
		v.fail("media.transcription.model", "must be set when media.transcription.base_url is (e.g. whisper-1)")
	}
}
