package hub

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/switchboard-bot/switchboard/memory"
)

// /files (issue 31): the chat's workspace files — path and size, ordered by
// path, at most maxFilesListed lines — then the totals against the bounds.
// The list is read from the store, so it shows what the chat's committed
// turns left (a running turn's staged files appear once it commits).

// maxFilesListed bounds the lines /files shows.
const maxFilesListed = 50

// filesCommand answers /files for the chat key.
func (h *Handler) filesCommand(ctx context.Context, it item, key string) {
	ws, ok := h.store.(memory.Workspace)
	if !ok {
		h.reply(it, "Files are not kept here.")
		return
	}
	list, err := ws.ListFiles(ctx, key)
	if err != nil {
		h.log.Error("list files", "session", key, "err", err)
		h.reply(it, "Sorry, I could not read this chat's files. The operator can find the cause in the log.")
		return
	}
	var limits memory.WorkspaceLimits
	if h.wsLimits != nil {
		limits = h.wsLimits()
	}
	h.reply(it, filesText(list, limits.WithDefaults()))
}

// filesText renders /files.
func filesText(list []memory.FileInfo, l memory.WorkspaceLimits) string {
	var total int64
	for _, f := range list {
		total += f.Size
	}
	foot := fmt.Sprintf("%d of %d files, %s of %s (one file at most %s)", len(list), l.MaxFiles,
		memory.FormatBytes(total), memory.FormatBytes(l.MaxBytes), memory.FormatBytes(l.MaxFile))
	if len(list) == 0 {
		return "No files in this chat yet. (" + foot + ")"
	}
	var b strings.Builder
	b.WriteString("Files in this chat:\n")
	for i, f := range list {
		if i == maxFilesListed {
			fmt.Fprintf(&b, "… and %d more\n", len(list)-i)
			break
		}
		fmt.Fprintf(&b, "%s — %s\n", mdLiteral(f.Path), memory.FormatBytes(f.Size))
	}
	b.WriteString(foot)
	return b.String()
}

// mdLiteral backslash-escapes what Markdown would take from a file name in
// /files (sent as Markdown like every reply), so "*x*.md", "<b>.html",
// "# notes" or "1. one" show as written: the inline markers everywhere
// (an underscore only at a word's edge: "my_notes.md" stays as it is), and
// a block marker at the start. Plain names are left alone, so a channel
// that shows Markdown as text (the terminal console) shows them unchanged.
func mdLiteral(s string) string {
	var b strings.Builder
	rs := []rune(s)
	alnum := func(i int) bool {
		return i >= 0 && i < len(rs) && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i]))
	}
	lead := 0 // a numbered-list marker "12." or "12)" at the start
	for lead < len(rs) && rs[lead] >= '0' && rs[lead] <= '9' {
		lead++
	}
	for i, r := range rs {
		esc := strings.ContainsRune("\\`*[]<>~|&", r) ||
			r == '_' && !(alnum(i-1) && alnum(i+1)) ||
			i == 0 && strings.ContainsRune("#-+=", r) ||
			i == lead && lead > 0 && (r == '.' || r == ')')
		if esc {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
