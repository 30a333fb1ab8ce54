package media

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// errUnreadable marks audio whose container cannot be read.
var errUnreadable = errors.New("unreadable audio")

// AudioDuration reads the length of OGG (Opus or Vorbis) and WAV audio from
// the container. ok is false for formats whose length is not read here
// (MP3, M4A, WebM: only the size bound applies); err is set for an OGG or
// WAV file that does not parse.
func AudioDuration(data []byte) (d time.Duration, ok bool, err error) {
	switch {
	case bytes.HasPrefix(data, []byte("OggS")):
		d, err := oggDuration(data)
		return d, err == nil, err
	case len(data) > 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WAVE")):
		d, err := wavDuration(data)
		return d, err == nil, err
	}
	return 0, false, nil
}

// oggDuration: the last page's granule position over the stream's rate
// (Opus: always 48 kHz, minus the header's pre-skip; Vorbis: the rate of
// its identification header).
func oggDuration(data []byte) (time.Duration, error) {
	// First page: header must be an Opus or Vorbis identification packet.
	if len(data) < 27 {
		return 0, fmt.Errorf("%w: OGG file cut short", errUnreadable)
	}
	nseg := int(data[26])
	body := 27 + nseg
	if len(data) < body+19 {
		return 0, fmt.Errorf("%w: OGG file cut short", errUnreadable)
	}
	first := data[body:]
	var rate, preskip int64
	switch {
	case bytes.HasPrefix(first, []byte("OpusHead")):
		rate = 48000
		preskip = int64(binary.LittleEndian.Uint16(first[10:12]))
	case bytes.HasPrefix(first, []byte("\x01vorbis")) && len(first) >= 16:
		rate = int64(binary.LittleEndian.Uint32(first[12:16]))
	default:
		return 0, fmt.Errorf("%w: OGG stream is neither Opus nor Vorbis", errUnreadable)
	}
	if rate <= 0 {
		return 0, fmt.Errorf("%w: OGG stream has no sample rate", errUnreadable)
	}
	last := bytes.LastIndex(data, []byte("OggS"))
	if last < 0 || len(data) < last+14 {
		return 0, fmt.Errorf("%w: OGG file has no final page", errUnreadable)
	}
	granule := int64(binary.LittleEndian.Uint64(data[last+6 : last+14]))
	if granule < 0 {
		return 0, fmt.Errorf("%w: OGG final page has no position", errUnreadable)
	}
	samples := granule - preskip
	if samples < 0 {
		samples = 0
	}
	return time.Duration(samples * int64(time.Second) / rate), nil
}

// wavDuration: the data chunk's size over the fmt chunk's byte rate.
func wavDuration(data []byte) (time.Duration, error) {
	var byteRate, dataSize int64
	for off := 12; off+8 <= len(data); {
		id := string(data[off : off+4])
		size := int64(binary.LittleEndian.Uint32(data[off+4 : off+8]))
		switch id {
		case "fmt ":
			if off+16 > len(data) {
				return 0, fmt.Errorf("%w: WAV fmt chunk cut short", errUnreadable)
			}
			byteRate = int64(binary.LittleEndian.Uint32(data[off+16 : min(off+20, len(data))]))
		case "data":
			dataSize = size
		}
		if id == "data" {
			break
		}
		off += 8 + int(size) + int(size&1)
		if size > int64(len(data)) {
			break
		}
	}
	if byteRate <= 0 || dataSize <= 0 {
		return 0, fmt.Errorf("%w: WAV file without fmt or data", errUnreadable)
	}
	return time.Duration(dataSize * int64(time.Second) / byteRate), nil
}

// transcriber calls an OpenAI-compatible /v1/audio/transcriptions.
type transcriber struct {
	ep     Endpoint
	client *openai.Client
}

func newTranscriber(ep Endpoint, hc *http.Client) *transcriber {
	cfg := openai.DefaultConfig(ep.APIKey)
	cfg.BaseURL = strings.TrimRight(ep.BaseURL, "/")
	if hc != nil {
		cfg.HTTPClient = hc
	}
	return &transcriber{ep: ep, client: openai.NewClientWithConfig(cfg)}
}

// Transcribe sends the audio (named name) and returns the text.
func (t *transcriber) Transcribe(ctx context.Context, data []byte, name string) (string, error) {
	resp, err := t.client.CreateTranscription(ctx, openai.AudioRequest{
		Model:    t.ep.Model,
		FilePath: name,
		Reader:   bytes.NewReader(data),
		Language: t.ep.Language,
		Format:   openai.AudioResponseFormatJSON,
	})
	if err != nil {
		return "", endpointError(err, t.ep.APIKey)
	}
	return strings.TrimSpace(resp.Text), nil
}

// endpointError is err as a user may read it: the server's message for an
// API error, the status otherwise; never the key.
func endpointError(err error, key string) error {
	var ae *openai.APIError
	var re *openai.RequestError
	var msg string
	switch {
	case errors.As(err, &ae):
		msg = fmt.Sprintf("the endpoint answered %d: %s", ae.HTTPStatusCode, clipText(ae.Message, 200))
	case errors.As(err, &re):
		msg = fmt.Sprintf("the endpoint answered %d", re.HTTPStatusCode)
	case errors.Is(err, context.DeadlineExceeded):
		msg = "the endpoint did not answer in time"
	default:
		msg = "the endpoint could not be reached: " + clipText(err.Error(), 200)
	}
	if key != "" {
		msg = strings.ReplaceAll(msg, key, "[redacted]")
	}
	return errors.New(msg)
}

// audioName gives the upload a name whose extension matches the bytes
// (servers pick the decoder by it).
func audioName(name, mime string) string {
	ext := map[string]string{"audio/ogg": ".ogg", "audio/mpeg": ".mp3", "audio/wav": ".wav",
		"audio/flac": ".flac", "audio/mp4": ".m4a", "audio/webm": ".webm"}[mime]
	base := strings.TrimSuffix(path.Base(name), path.Ext(name))
	if base == "" || base == "." || base == "/" {
		base = "audio"
	}
	if ext == "" {
		ext = path.Ext(name)
	}
	return base + ext
}

func clipText(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
