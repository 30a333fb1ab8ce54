package media

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketranscribe"
	"github.com/switchboard-bot/switchboard/memory"
)

// emptyWorkspace is a chat workspace with no files yet.
type emptyWorkspace struct{}

func (emptyWorkspace) ListFiles(context.Context, string) ([]memory.FileInfo, error) { return nil, nil }
func (emptyWorkspace) ReadFile(context.Context, string, string) ([]byte, memory.FileInfo, error) {
	return nil, memory.FileInfo{}, memory.ErrNotFound
}

func newAgent(t *testing.T, llm *fakellm.Server, prep agent.MediaPreparer) (*agent.Agent, *agent.MemorySessions) {
	t.Helper()
	sessions := agent.NewMemorySessions()
	a, err := agent.New(agent.Options{
		BaseURL: llm.URL, APIKey: "sk-llm", Model: "fake-model", HTTPClient: llm.HTTPClient(),
		Timeout: 10 * time.Second, StreamIdleTimeout: 10 * time.Second, Location: time.UTC,
		Sessions: sessions, Tools: agent.NewRegistry(), Workspace: emptyWorkspace{}, Media: prep,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, sessions
}

// TestTurnHearsVoiceNote: a voice note's transcript reaches the model as the
// user's words, marked as transcribed; the session keeps it and the audio
// is committed into the chat's workspace with the turn.
func TestTurnHearsVoiceNote(t *testing.T) {
	ogg := voiceNote(t, "what time is it", 0)
	tr := startTranscriber(t, "what time is it")
	llm := fakellm.Start(t, fakellm.Text("It is noon."))
	a, sessions := newAgent(t, llm, New(Config{Transcription: tr}, nil, nil))

	res, err := a.ProcessMessage(context.Background(), agent.Request{SessionKey: "telegram:42",
		Media: []agent.Media{{MIME: "audio/ogg", Name: "voice.ogg", Data: ogg}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "It is noon." || !res.Spoke {
		t.Errorf("answer %q spoke %v", res.Text, res.Spoke)
	}
	seen := llm.LastRequest().LastUserText()
	if !strings.Contains(seen, "transcribed by speech recognition") || !strings.HasSuffix(seen, "\nwhat time is it") {
		t.Errorf("model saw %q", seen)
	}
	turns := sessions.Turns("telegram:42")
	if len(turns) != 1 || len(turns[0].Messages) == 0 || !strings.HasSuffix(turns[0].Messages[0].Content, "what time is it") {
		t.Fatalf("session did not keep the transcript: %+v", turns)
	}
	files := turns[0].Files
	if files == nil || len(files.Writes) != 1 || !bytes.Equal(files.Writes[0].Content, ogg) || !strings.HasPrefix(files.Writes[0].Path, "attachments/") {
		t.Errorf("workspace change %+v: want the voice note under attachments/", files)
	}
}

// TestTurnVoiceNoteWithoutTranscription: not configured → the turn is
// still answered and the answer says which key to set.
func TestTurnVoiceNoteWithoutTranscription(t *testing.T) {
	ogg := voiceNote(t, "hello", 0)
	llm := fakellm.Start(t, fakellm.Text("Sorry, I could not hear that."))
	a, _ := newAgent(t, llm, New(Config{}, nil, nil))
	res, err := a.ProcessMessage(context.Background(), agent.Request{SessionKey: "telegram:42", Text: "listen",
		Media: []agent.Media{{MIME: "audio/ogg", Name: "voice.ogg", Data: ogg}}})
	if err != nil {
		t.Fatal(err)
	}
	want := "Sorry, I could not hear that.\n\nI cannot listen to voice notes yet: set media.transcription.base_url"
	if !strings.HasPrefix(res.Text, want) {
		t.Errorf("answer %q, want it to start %q", res.Text, want)
	}
	if seen := llm.LastRequest().LastUserText(); !strings.Contains(seen, "listen") || !strings.Contains(seen, "not transcribed: speech recognition is not configured") {
		t.Errorf("model saw %q", seen)
	}
}

func startTranscriber(t *testing.T, text string) Endpoint {
	t.Helper()
	fake := faketranscribe.Start(t, transcribeKey, faketranscribe.Text(text), nil)
	return Endpoint{BaseURL: fake.URL, APIKey: transcribeKey}
}
