package daemon

import (
	"log/slog"
	"net/http"
	"sync"

	"github.com/switchboard-bot/switchboard/agent/media"
	"github.com/switchboard-bot/switchboard/channels/hub"
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

// speechSource is the hub's voice-reply Speaker (hub.HandlerOptions.Speech):
// media.speech of the current config, so a reload that sets, changes or
// clears it applies to the next answer; nil when its base_url is empty.
func speechSource(d *Daemon) func() hub.Speaker {
	var mu sync.Mutex
	var last config.MediaSpeech
	var sp *media.Speaker
	return func() hub.Speaker {
		cur := d.config().Media.Speech
		mu.Lock()
		defer mu.Unlock()
		if sp == nil || cur != last {
			last, sp = cur, media.NewSpeaker(mediaConfig(config.Media{Speech: cur}), d.opts.HTTPClient)
		}
		if sp == nil {
			return nil // not a typed nil: the hub tests for nil
		}
		return sp
	}
}
