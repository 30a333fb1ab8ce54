package media

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/agent"
)

// Processor prepares a turn's attachments (agent.MediaPreparer).
type Processor struct {
	cfg Config
	tr  *transcriber
	log *slog.Logger
}

// New returns a Processor for cfg. hc, if set, is the HTTP client of the
// audio endpoints.
func New(cfg Config, hc *http.Client, log *slog.Logger) *Processor {
	cfg = cfg.WithDefaults()
	if log == nil {
		log = slog.Default()
	}
	p := &Processor{cfg: cfg, log: log}
	if cfg.Transcription.Configured() {
		p.tr = newTranscriber(cfg.Transcription, hc)
	}
	return p
}

// prepared accumulates one turn's result.
type prepared struct {
	out     agent.PreparedMedia
	text    []string
	notices map[string]bool
}

func (r *prepared) notice(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if r.notices[n] {
		return
	}
	r.notices[n] = true
	r.out.Notices = append(r.out.Notices, n)
}

// PrepareMedia turns the attachments into model input: images stay media,
// audio becomes its transcript, documents an excerpt; files are saved with
// save (nil: no workspace). It never fails: what cannot be used becomes a
// notice.
func (p *Processor) PrepareMedia(ctx context.Context, in []agent.Media, save agent.SaveFile) agent.PreparedMedia {
	r := &prepared{notices: map[string]bool{}}
	for _, m := range in {
		s := Sniff(m.Data, m.MIME, m.Name)
		name := m.Name
		if name == "" {
			name = defaultName(s)
		}
		a := attachment{Media: m, name: name, sniffed: s}
		switch s.Kind {
		case KindImage:
			m.MIME = s.MIME
			r.out.Media = append(r.out.Media, m)
			if s.Lied {
				r.text = append(r.text, fmt.Sprintf("[attachment %q is named like another kind of file, but it is an image (%s)]", name, s.MIME))
			}
		case KindAudio:
			p.audio(ctx, r, a, save)
		case KindPDF, KindDOCX, KindHTML, KindText:
			p.document(ctx, r, a, save)
		case KindEmpty:
			r.notice("Attachment %q is empty: there was nothing to read.", name)
			r.text = append(r.text, fmt.Sprintf("[attachment %q is empty]", name))
		default:
			where := p.save(ctx, r, a, m.Data, save)
			r.text = append(r.text, fmt.Sprintf("[attachment %q (%s, %s)%s: its content is not read%s]", name, s.MIME, sizeText(int64(len(m.Data))), liedText(a), where))
		}
	}
	r.out.Text = strings.Join(r.text, "\n\n")
	return r.out
}

// attachment is one input with what its bytes are.
type attachment struct {
	agent.Media
	name    string
	sniffed Sniffed
}

func liedText(a attachment) string {
	if !a.sniffed.Lied {
		return ""
	}
	return fmt.Sprintf(", though its name or type says otherwise it is %s", a.sniffed.MIME)
}

// audio bounds and transcribes one audio attachment.
func (p *Processor) audio(ctx context.Context, r *prepared, a attachment, save agent.SaveFile) {
	size := int64(len(a.Data))
	where := p.save(ctx, r, a, a.Data, save)
	label := "voice note"
	if !strings.HasPrefix(a.sniffed.MIME, "audio/ogg") {
		label = fmt.Sprintf("audio %q", a.name)
	}
	fail := func(reason, notice string) {
		r.text = append(r.text, fmt.Sprintf("[%s — not transcribed: %s%s]", label, reason, where))
		r.notice("%s", notice)
	}
	if size > p.cfg.MaxAudio {
		fail(fmt.Sprintf("it is %s, over the %s limit", sizeText(size), sizeText(p.cfg.MaxAudio)),
			fmt.Sprintf("I could not listen to the %s: it is %s, more than %s allows (%s).", label, sizeText(size), KeyMaxAudio, sizeText(p.cfg.MaxAudio)))
		return
	}
	d, known, err := AudioDuration(a.Data)
	if err != nil {
		fail("the audio cannot be read", fmt.Sprintf("I could not listen to the %s: the file is not readable audio (%v).", label, err))
		return
	}
	if known && d > p.cfg.MaxAudioDuration {
		fail(fmt.Sprintf("it lasts %s, over the %s limit", durationText(d), durationText(p.cfg.MaxAudioDuration)),
			fmt.Sprintf("I could not listen to the %s: it lasts %s, longer than %s allows (%s).", label, durationText(d), KeyMaxAudioDuration, p.cfg.MaxAudioDuration))
		return
	}
	if p.tr == nil {
		fail("speech recognition is not configured",
			fmt.Sprintf("I cannot listen to voice notes yet: set %s (and media.transcription.api_key) in config.yaml to an OpenAI-compatible /v1/audio/transcriptions endpoint.", KeyTranscriptionURL))
		return
	}
	tctx, cancel := context.WithTimeout(ctx, p.cfg.TranscribeTimeout)
	defer cancel()
	text, err := p.tr.Transcribe(tctx, a.Data, audioName(a.name, a.sniffed.MIME))
	if err != nil {
		p.log.Warn("transcription failed", "name", a.name, "size", size, "err", err)
		fail("speech recognition failed", fmt.Sprintf("I could not listen to the %s: speech recognition failed (%v).", label, err))
		return
	}
	if text == "" {
		fail("no speech was recognized", fmt.Sprintf("I could not make out any words in the %s.", label))
		return
	}
	length := ""
	if known {
		length = " " + durationText(d)
	}
	r.out.Spoke = true
	r.text = append(r.text, fmt.Sprintf("[%s%s, transcribed by speech recognition%s]\n%s", label, length, where, text))
}

// document extracts one document's text within the bounds.
func (p *Processor) document(ctx context.Context, r *prepared, a attachment, save agent.SaveFile) {
	size := int64(len(a.Data))
	where := p.save(ctx, r, a, a.Data, save)
	if size > p.cfg.MaxUpload {
		r.text = append(r.text, fmt.Sprintf("[document %q (%s): not read, over the %s limit%s]", a.name, sizeText(size), sizeText(p.cfg.MaxUpload), where))
		r.notice("I could not read %q: it is %s, more than %s allows (%s).", a.name, sizeText(size), KeyMaxUpload, sizeText(p.cfg.MaxUpload))
		return
	}
	xctx, cancel := context.WithTimeout(ctx, p.cfg.ExtractTimeout)
	defer cancel()
	ex, err := Extract(xctx, a.sniffed.Kind, a.Data, p.cfg.MaxDocumentPages, p.cfg.MaxChars)
	if errors.Is(err, ErrTimeout) {
		err = fmt.Errorf("reading it took longer than %s", p.cfg.ExtractTimeout)
	}
	if err != nil {
		p.log.Warn("document not read", "name", a.name, "kind", a.sniffed.Kind, "size", size, "err", err)
		r.text = append(r.text, fmt.Sprintf("[document %q%s: its text cannot be read: %v%s]", a.name, liedText(a), err, where))
		r.notice("I could not read %q: %v.", a.name, err)
		return
	}
	if ex.NoText {
		r.text = append(r.text, fmt.Sprintf("[document %q, %d pages: it has no text layer (a scan?), so its text cannot be read%s]", a.name, ex.Pages, where))
		r.notice("%q has no text layer (it looks like a scanned PDF): I cannot read its text.", a.name)
		return
	}
	textPath := ""
	if a.sniffed.Kind != KindText {
		textPath = p.save(ctx, r, attachment{name: a.name + ".txt", sniffed: a.sniffed}, []byte(ex.Text), save)
	}
	var head strings.Builder
	fmt.Fprintf(&head, "[document %q (%s", a.name, a.sniffed.MIME)
	if ex.Pages > 0 {
		fmt.Fprintf(&head, ", %d pages", ex.Pages)
	}
	fmt.Fprintf(&head, ")%s%s]", liedText(a), where)
	excerpt, cut := clipRunes(ex.Text, p.cfg.ExcerptChars)
	block := head.String() + "\n" + wrapDocument(a.name, excerpt)
	var tail []string
	if cut {
		full := strings.TrimPrefix(textPath, "; text saved as ")
		if full == "" {
			full = strings.TrimPrefix(where, "; saved as ")
		}
		if full != "" {
			tail = append(tail, fmt.Sprintf("this is the first %d of %d characters; the whole text is in the workspace at %s (read it with read_file)", p.cfg.ExcerptChars, utf8.RuneCountInString(ex.Text), full))
		} else {
			tail = append(tail, fmt.Sprintf("this is the first %d of %d characters", p.cfg.ExcerptChars, utf8.RuneCountInString(ex.Text)))
		}
	}
	if ex.Pages > ex.Read && ex.Read > 0 {
		tail = append(tail, fmt.Sprintf("only the first %d of %d pages were read (%s)", ex.Read, ex.Pages, KeyMaxPages))
		r.notice("%q has %d pages: I read the first %d (%s).", a.name, ex.Pages, ex.Read, KeyMaxPages)
	} else if ex.Truncated {
		tail = append(tail, "the text was cut at the extraction limit")
	}
	if len(tail) > 0 {
		block += "\n[" + strings.Join(tail, "; ") + "]"
	}
	r.text = append(r.text, block)
}

// wrapDocument marks a document's text as content, not instructions, and
// keeps it from closing its own block.
func wrapDocument(name, text string) string {
	text = strings.ReplaceAll(text, "</document", "<\u200b/document")
	return fmt.Sprintf("<document name=%q trust=\"untrusted\">\n%s\n</document>", name, text)
}

func clipRunes(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	return string([]rune(s)[:n]), true
}

// save stores data in the chat's workspace under attachments/ and returns
// the phrase telling the model where ("; saved as attachments/…"), or why
// not.
func (p *Processor) save(ctx context.Context, r *prepared, a attachment, data []byte, save agent.SaveFile) string {
	if save == nil || len(data) == 0 {
		return ""
	}
	sum := sha256.Sum256(data)
	fp := "attachments/" + hex.EncodeToString(sum[:4]) + "-" + safeName(a.name)
	if err := save(ctx, fp, data); err != nil {
		p.log.Warn("attachment not saved in the workspace", "name", a.name, "err", err)
		r.notice("%q was not saved in the chat's files: %v.", a.name, err)
		return "; not saved in the workspace"
	}
	if strings.HasSuffix(a.name, ".txt") && a.Data == nil {
		return "; text saved as " + fp
	}
	return "; saved as " + fp
}

// safeName keeps a file name's letters, digits, '.', '-' and '_' (others
// become '_'), at most 100 bytes, never starting with '.'.
func safeName(name string) string {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	var b strings.Builder
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 100 {
			break
		}
	}
	s := strings.TrimLeft(b.String(), ".")
	if s == "" {
		s = "file"
	}
	return s
}

func defaultName(s Sniffed) string {
	switch s.Kind {
	case KindAudio:
		return "voice" + map[string]string{"audio/ogg": ".ogg", "audio/mpeg": ".mp3", "audio/wav": ".wav"}[s.MIME]
	case KindPDF:
		return "document.pdf"
	case KindDOCX:
		return "document.docx"
	}
	return "attachment"
}
