package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
)

var _ channels.FileSender = (*Adapter)(nil)

// FilePrefix starts the message that shows a sent file in a conversation.
const FilePrefix = "📎 "

// DownloadPath is the console's download of a chat's workspace file
// (internal/ui serves it to the logged-in operator; its Markdown renderer
// lets a link to exactly this path through, and no other relative link).
const DownloadPath = "/ui/sessions/file"

// SendFile shows a file the bot sent as a message with a link to the
// console's download of it from the chat's workspace, the caption below.
// The adapter keeps no bytes: the link serves the file as the workspace
// holds it. There is no size limit (MaxFileSize 0).
func (a *Adapter) SendFile(ctx context.Context, f channels.OutgoingFile) (string, error) {
	if err := CheckConv(f.Target.ChatID); err != nil {
		return "", channels.Permanent(err)
	}
	if f.Path == "" || f.Name == "" {
		return "", channels.Permanent(fmt.Errorf("web: a file needs a name and a workspace path"))
	}
	link := DownloadPath + "?key=" + url.QueryEscape(f.Target.String()) + "&path=" + url.QueryEscape(f.Path)
	text := FilePrefix + "[" + escapeMarkdown(f.Name) + "](" + link + ") (" + humanSize(len(f.Data)) + ")"
	plain := FilePrefix + f.Name
	if c := strings.TrimSpace(f.Caption); c != "" {
		text += "\n\n" + escapeMarkdown(c)
		plain += "\n\n" + c
	}
	return a.Send(ctx, channels.Outgoing{Target: f.Target, Text: text, Plain: plain, ReplyTo: f.ReplyTo})
}

// MaxFileSize is 0: the console serves the workspace's own copy.
func (a *Adapter) MaxFileSize() int64 { return 0 }

// escapeMarkdown backslash-escapes the ASCII punctuation Markdown gives a
// meaning to, so a file name or caption shows as written (a name like
// "[x](javascript:…)" stays text).
func escapeMarkdown(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\n' || r == '\r' {
			r = ' '
		}
		if r < 0x80 && strings.ContainsRune("\\`*_{}[]()#+-.!|<>~&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// humanSize is n bytes for a person ("2.9 KiB").
func humanSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
