package ui

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchboard-bot/switchboard/memory"
)

// The Files section of a session's page (issue 31): the chat's workspace
// files with their sizes, and each one's download. A download is always an
// attachment of type application/octet-stream under a sanitized name, with
// nosniff and a sandboxing CSP: a file the model wrote (an .html, an .svg)
// is never rendered by the console's origin. Like every console page it is
// for the logged-in operator only; downloads are audited.

// filesData is the Files section.
type filesData struct {
	List  []memory.FileInfo
	Total int64
	Err   bool // the list could not be read (logged)
}

// sessionFiles reads the Files section of chat key.
func (s *Server) sessionFiles(ctx context.Context, key string) filesData {
	list, err := s.o.Backend.Store().ListFiles(ctx, key)
	if err != nil {
		s.log.Error("list workspace files", "session", key, "err", err)
		return filesData{Err: true}
	}
	d := filesData{List: list}
	for _, f := range list {
		d.Total += f.Size
	}
	return d
}

// sessionFile downloads one workspace file (GET /ui/sessions/file?key=&path=).
func (s *Server) sessionFile(w http.ResponseWriter, r *http.Request) {
	key := r.FormValue("key")
	p, err := memory.CleanPath(r.FormValue("path"))
	if err != nil || key == "" {
		s.notFound(w, r, "No such file.")
		return
	}
	data, fi, err := s.o.Backend.Store().ReadFile(r.Context(), key, p)
	if errors.Is(err, fs.ErrNotExist) {
		s.notFound(w, r, "No file "+p+" in "+key+".")
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", contentDisposition(fi.Path))
	h.Set("Content-Length", strconv.FormatInt(int64(len(data)), 10))
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("X-Content-Type-Options", "nosniff")
	s.audit(r.Context(), "session.file.download", key, "", fi.Path)
	_, _ = w.Write(data)
}

// contentDisposition is an attachment header for a file named by the last
// segment of p: an ASCII fallback name of safe characters only, and the
// real name percent-encoded (RFC 6266 filename*).
func contentDisposition(p string) string {
	name := p[strings.LastIndexByte(p, '/')+1:]
	safe := []byte(name)
	for i, c := range safe {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			safe[i] = '_'
		}
	}
	fallback := strings.TrimLeft(string(safe), ".")
	if fallback == "" {
		fallback = "file"
	}
	return `attachment; filename="` + fallback + `"; filename*=UTF-8''` + url.PathEscape(name)
}

// fileSize renders a size as the chat's /files does ("1.5 KiB").
func fileSize(n int64) string { return memory.FormatBytes(n) }
