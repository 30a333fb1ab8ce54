package daemon

import (
	"log/slog"
	"net/http"

	"github.com/switchboard-bot/switchboard/agent/media"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// mediaConfig maps the media section to agent/media's config.
func mediaConfig(m config.Media) media.Config {
	return media.Config{
		Transcription: media.Endpoint{BaseURL: m.Transcription.BaseURL, APIKey: m.Transcription.APIKey.Value(),
			Model: m.Transcription.Model, Language: m.Transcription.Language},
		Speech: media.Endpoint{BaseURL: m.Speech.BaseURL, APIKey: m.Speech.APIKey.Value(),
			Model: m.Speech.Model, Voice: m.Speech.Voice},
		MaxAudio:         int64(m.MaxAudio),
		MaxAudioDuration: m.MaxAudioDuration,
		MaxDocumentPages: m.MaxDocumentPages,
		MaxUpload:        int64(m.MaxUpload),
	}
}

// mediaPreparer is the agent's attachment preparer (voice notes
// transcribed, documents read).
func mediaPreparer(cfg *config.Config, client *http.Client, log *slog.Logger) *media.Processor {
	return media.New(mediaConfig(cfg.Media), client, log.With("component", "media"))
}
