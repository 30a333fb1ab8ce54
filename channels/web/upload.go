package web

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
)

// maxFileName bounds an uploaded file's name.
const maxFileName = 255

// PostFile hands an operator's upload (the console chat's file button) to
// the handler as a message with one attachment, text being its optional
// caption: like every platform's attachments it then goes through the same
// path (a voice note transcribed, a document read, the file saved in the
// chat's workspace). The caller bounds the data (media.max_upload) before
// reading it; the name is kept as the text it is (its base name, at most
// 255 bytes), never interpreted.
func (a *Adapter) PostFile(ctx context.Context, conv, user, text string, f channels.Media) (string, error) {
	if len(f.Data) == 0 {
		return "", errors.New("web: the file is empty")
	}
	name := path.Base(strings.ReplaceAll(f.Name, "\\", "/"))
	if name == "." || name == "/" || strings.TrimSpace(name) == "" {
		name = "upload"
	}
	if !utf8.ValidString(name) || strings.ContainsAny(name, "\x00\r\n") {
		return "", fmt.Errorf("web: the file name %q is not valid", clip(name))
	}
	if len(name) > maxFileName {
		return "", fmt.Errorf("web: the file name has more than %d bytes", maxFileName)
	}
	f.Name = name
	return a.post(ctx, conv, user, text, []channels.Media{f})
}
