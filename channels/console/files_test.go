package console

import (
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
)

// Files implements channeltest.FileDriver: the terminal shows a file as a
// line naming it (no bytes), its caption on the next line.
func (d consoleDriver) Files(channels.Target) []channeltest.SentFile {
	var out []channeltest.SentFile
	for _, m := range d.out.messages() {
		rest, ok := strings.CutPrefix(m, "[file] ")
		if !ok {
			continue
		}
		first, caption, _ := strings.Cut(rest, "\n")
		name, _, _ := strings.Cut(first, " (")
		out = append(out, channeltest.SentFile{Name: name, Caption: strings.TrimSpace(caption)})
	}
	return out
}
