package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
)

// Uploads in the console's chat (issue 32). The chat page's file button
// posts one file (multipart, with the session's CSRF token like every form)
// to /ui/chat/upload; it becomes a web-channel message with the file as its
// attachment, so it takes the path of every platform's attachments: a voice
// note is transcribed, a document read, the file saved in the chat's
// workspace. The body is bounded by media.max_upload before it is read: a
// request that announces more is refused at once, one that sends more is
// cut off by http.MaxBytesReader, and either way the answer says the limit
// and the key. The file's name is only ever shown as text.

// ChatUploader is a Chat that takes files (*web.Adapter is one).
type ChatUploader interface {
	PostFile(ctx context.Context, conv, user, text string, f channels.Media) (string, error)
}

// uploadOverhead is what a multipart body adds around the file (boundaries,
// headers, the csrf, conv and caption fields).
const uploadOverhead = 64 << 10

// bodyBound is the body limit of a POST and what a larger one is told.
type bodyBound struct {
	limit   int64
	refusal string
}

type boundKey struct{}

// formBound is r's body limit: an upload's (uploadBound), else maxForm.
func formBound(r *http.Request) bodyBound {
	if b, ok := r.Context().Value(boundKey{}).(bodyBound); ok {
		return b
	}
	return bodyBound{limit: maxForm,
		refusal: fmt.Sprintf("refused: the request is over %d MiB, the most a form (a config file, a persona) may be", maxForm>>20)}
}

// maxUpload is media.max_upload of the current config.
func (s *Server) maxUpload() int64 { return int64(s.o.Backend.Config().Media.MaxUpload) }

func uploadRefusal(limit int64) string {
	return fmt.Sprintf("the file is larger than %s, the most the console takes (media.max_upload)", sizeText(limit))
}

// uploadBound refuses an upload that announces more than media.max_upload
// before anything is read, and sets the bound auth.require reads the form
// under.
func (s *Server) uploadBound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := s.maxUpload()
		if r.ContentLength > limit+uploadOverhead {
			w.Header().Set("Connection", "close") // the rest of the body is not read
			http.Error(w, uploadRefusal(limit), http.StatusRequestEntityTooLarge)
			return
		}
		b := bodyBound{limit: limit + uploadOverhead, refusal: uploadRefusal(limit)}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), boundKey{}, b)))
	})
}

// chatUpload posts the uploaded file to the conversation.
func (s *Server) chatUpload(w http.ResponseWriter, r *http.Request) {
	conv, text := r.PostFormValue("conv"), strings.TrimSpace(r.PostFormValue("text"))
	back := "/ui/chat?conv=" + url.QueryEscape(conv)
	status := http.StatusUnprocessableEntity
	up, _ := s.o.Chat.(ChatUploader)
	var err error
	switch {
	case s.o.Chat == nil:
		err = errors.New("the web channel is off (channels.web.enabled)")
	case up == nil:
		err = errors.New("this chat takes no files")
	case !validConv(conv):
		err = errors.New("not a chat id")
	case len(text) > maxChatText:
		err = errors.New("the message is too long")
	default:
		status, err = s.postUpload(r, up, conv, text)
	}
	if wantsJSON(r) {
		if err != nil {
			http.Error(w, err.Error(), status)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err != nil {
		s.redirect(w, r, back, "Not sent: "+err.Error())
		return
	}
	s.redirect(w, r, back, "")
}

// postUpload reads the form's file (already bounded) and posts it.
func (s *Server) postUpload(r *http.Request, up ChatUploader, conv, text string) (int, error) {
	f, hdr, err := r.FormFile("file")
	if err != nil {
		return http.StatusUnprocessableEntity, errors.New("no file was chosen")
	}
	defer func() { _ = f.Close() }()
	limit := s.maxUpload()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return http.StatusBadRequest, errors.New("the file could not be read")
	case int64(len(data)) > limit:
		return http.StatusRequestEntityTooLarge, errors.New(uploadRefusal(limit))
	case len(data) == 0:
		return http.StatusUnprocessableEntity, errors.New("the file is empty")
	}
	m := channels.Media{MIME: hdr.Header.Get("Content-Type"), Name: hdr.Filename, Data: data}
	if _, err := up.PostFile(r.Context(), conv, Operator, text, m); err != nil {
		return http.StatusUnprocessableEntity, err
	}
	return http.StatusNoContent, nil
}

// sizeText renders a byte count as people read it ("25 MiB", "1.5 KiB").
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
