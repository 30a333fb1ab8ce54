package fakematrix

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Media the bot uploads: POST /_matrix/media/v3/upload?filename=… with the
// bytes as the body and their type as Content-Type answers
// {"content_uri": "mxc://server/id"}; the media is then served by the
// authenticated download endpoint like users' media. Bodies over MaxUpload
// are refused with 413 M_TOO_LARGE, as Synapse's max_upload_size does.

// MaxUpload is the fake's max_upload_size (Synapse's default, 50 MiB).
const MaxUpload = 50 << 20

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.opts.Token {
		writeErr(w, 401, "M_UNKNOWN_TOKEN", "Unknown access token")
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxUpload+1))
	if err != nil {
		writeErr(w, 400, "M_UNKNOWN", "unreadable body")
		return
	}
	if len(data) > MaxUpload {
		writeErr(w, 413, "M_TOO_LARGE", "Cannot upload files larger than "+strconv.Itoa(MaxUpload)+" bytes")
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: map[string]string{"filename": r.URL.Query().Get("filename")}})
	s.seq++
	mediaID := fmt.Sprintf("up%06d", s.seq)
	s.media[ServerName+"/"+mediaID] = mediaFile{mime: r.Header.Get("Content-Type"), data: data}
	s.notifyLocked()
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"content_uri": "mxc://" + ServerName + "/" + mediaID})
}

// SentFile is a file the bot posted (an m.file, m.image, m.audio or m.video
// event), with the bytes of its media.
type SentFile struct {
	EventID  string
	MsgType  string
	Body     string // the caption, or the file name without one
	FileName string
	MIME     string // info.mimetype
	Size     int    // info.size
	Data     []byte // the uploaded media the url names (nil: unknown)
}

// Files returns the files the bot posted in roomID, oldest first.
func (s *Server) Files(roomID string) []SentFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SentFile
	for _, e := range s.stream {
		if e.kind != "timeline" || e.room != roomID {
			continue
		}
		var ev event
		if json.Unmarshal(e.event, &ev) != nil || ev.Sender != s.opts.UserID || ev.Type != "m.room.message" {
			continue
		}
		var c struct {
			MsgType  string `json:"msgtype"`
			Body     string `json:"body"`
			FileName string `json:"filename"`
			URL      string `json:"url"`
			Info     struct {
				MIME string `json:"mimetype"`
				Size int    `json:"size"`
			} `json:"info"`
		}
		if json.Unmarshal(ev.Content, &c) != nil {
			continue
		}
		switch c.MsgType {
		case "m.file", "m.image", "m.audio", "m.video":
		default:
			continue
		}
		f := SentFile{EventID: ev.EventID, MsgType: c.MsgType, Body: c.Body, FileName: c.FileName, MIME: c.Info.MIME, Size: c.Info.Size}
		if m, ok := s.media[trimMXC(c.URL)]; ok {
			f.Data = append([]byte(nil), m.data...)
		}
		out = append(out, f)
	}
	return out
}

func trimMXC(u string) string {
	const p = "mxc://"
	if len(u) > len(p) && u[:len(p)] == p {
		return u[len(p):]
	}
	return u
}
