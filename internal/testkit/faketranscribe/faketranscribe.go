// Package faketranscribe is an OpenAI-compatible audio server for tests:
// POST /v1/audio/transcriptions (multipart/form-data, as the OpenAI API
// defines it: a "file" part with a file name, a "model" field, optional
// "language", "prompt", "response_format" and "temperature") answers
// {"text": …}, and POST /v1/audio/speech (JSON {model, input, voice,
// response_format}) answers audio bytes.
//
// It checks every request as the API does — bearer key, multipart shape,
// required fields, a non-empty file — and answers a malformed one 400 with
// an OpenAI error body, so a client that sends the wrong shape fails here as
// it would against the real service. Each accepted request is recorded
// (Transcriptions, Speeches) for assertions. The transcript is the
// Transcriber's answer; a Transcriber may also return an error status.
package faketranscribe

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Transcription is one accepted transcription request.
type Transcription struct {
	Model          string
	Language       string
	Prompt         string
	ResponseFormat string
	FileName       string
	FileType       string // the file part's Content-Type
	Audio          []byte
	Auth           string // the Authorization header
}

// Speech is one accepted speech request.
type Speech struct {
	Model          string `json:"model"`
	Input          string `json:"input"`
	Voice          string `json:"voice"`
	ResponseFormat string `json:"response_format"`
	Auth           string `json:"-"`
}

// Transcriber answers a transcription: the text, or a non-zero HTTP status
// with its error message.
type Transcriber func(t Transcription) (text string, status int, message string)

// Text answers every transcription with s.
func Text(s string) Transcriber {
	return func(Transcription) (string, int, string) { return s, 0, "" }
}

// Fail answers every transcription with status and message.
func Fail(status int, message string) Transcriber {
	return func(Transcription) (string, int, string) { return "", status, message }
}

// Server is the fake. URL is the base up to and including /v1.
type Server struct {
	URL string
	ts  *httptest.Server

	mu     sync.Mutex
	key    string
	tr     Transcriber
	speech []byte
	trs    []Transcription
	sps    []Speech
}

// Start runs a server that answers transcriptions with tr and speech with
// speechAudio; it closes when the test ends. key, when non-empty, is the
// bearer token every request must carry.
func Start(tb testing.TB, key string, tr Transcriber, speechAudio []byte) *Server {
	tb.Helper()
	s := &Server{key: key, tr: tr, speech: speechAudio}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/audio/transcriptions", s.transcribe)
	mux.HandleFunc("POST /v1/audio/speech", s.speak)
	s.ts = httptest.NewServer(mux)
	s.URL = s.ts.URL + "/v1"
	tb.Cleanup(s.ts.Close)
	return s
}

// HTTPClient is a client for the server.
func (s *Server) HTTPClient() *http.Client { return s.ts.Client() }

// SetTranscriber replaces the transcriber.
func (s *Server) SetTranscriber(tr Transcriber) {
	s.mu.Lock()
	s.tr = tr
	s.mu.Unlock()
}

// Transcriptions returns the accepted transcription requests.
func (s *Server) Transcriptions() []Transcription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Transcription(nil), s.trs...)
}

// Speeches returns the accepted speech requests.
func (s *Server) Speeches() []Speech {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Speech(nil), s.sps...)
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		apiError(w, http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided.")
		return false
	}
	return true
}

// transcribe checks the multipart request as the OpenAI API defines it.
func (s *Server) transcribe(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "Content-Type must be multipart/form-data with a boundary")
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "malformed multipart body: "+err.Error())
		return
	}
	t := Transcription{Auth: r.Header.Get("Authorization")}
	seenFile := false
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "malformed multipart body: "+err.Error())
			return
		}
		data, err := io.ReadAll(io.LimitReader(p, 26<<20))
		if err != nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "reading part: "+err.Error())
			return
		}
		switch p.FormName() {
		case "file":
			if p.FileName() == "" {
				apiError(w, http.StatusBadRequest, "invalid_request_error", "the file part has no filename")
				return
			}
			seenFile = true
			t.FileName, t.FileType, t.Audio = p.FileName(), p.Header.Get("Content-Type"), data
		case "model":
			t.Model = string(data)
		case "language":
			t.Language = string(data)
		case "prompt":
			t.Prompt = string(data)
		case "response_format":
			t.ResponseFormat = string(data)
		case "temperature", "timestamp_granularities[]", "chunking_strategy":
		default:
			apiError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("Unrecognized request argument supplied: %s", p.FormName()))
			return
		}
	}
	switch {
	case !seenFile || len(t.Audio) == 0:
		apiError(w, http.StatusBadRequest, "invalid_request_error", "'file' is a required property")
		return
	case t.Model == "":
		apiError(w, http.StatusBadRequest, "invalid_request_error", "'model' is a required property")
		return
	case t.ResponseFormat != "" && t.ResponseFormat != "json" && t.ResponseFormat != "verbose_json" && t.ResponseFormat != "text":
		apiError(w, http.StatusBadRequest, "invalid_request_error", "unsupported response_format "+t.ResponseFormat)
		return
	}
	s.mu.Lock()
	s.trs = append(s.trs, t)
	tr := s.tr
	s.mu.Unlock()
	text, status, msg := tr(t)
	if status != 0 {
		apiError(w, status, "invalid_request_error", msg)
		return
	}
	if t.ResponseFormat == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, text)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"text": text})
}

// speak checks the JSON request and answers the configured audio bytes.
func (s *Server) speak(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "Content-Type must be application/json")
		return
	}
	var sp Speech
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	if err := dec.Decode(&sp); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	if sp.Model == "" || strings.TrimSpace(sp.Input) == "" || sp.Voice == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "model, input and voice are required")
		return
	}
	if utf8.RuneCountInString(sp.Input) > 4096 { // characters, as OpenAI counts
		apiError(w, http.StatusBadRequest, "invalid_request_error", "input is longer than 4096 characters")
		return
	}
	sp.Auth = r.Header.Get("Authorization")
	s.mu.Lock()
	s.sps = append(s.sps, sp)
	audio := s.speech
	s.mu.Unlock()
	ct := "audio/mpeg"
	if sp.ResponseFormat == "opus" {
		ct = "audio/ogg"
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(audio)
}
