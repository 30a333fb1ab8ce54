package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-bot/switchboard/channels"
)

// errTooLarge marks an attachment over MaxMediaBytes.
var errTooLarge = errors.New("attachment exceeds the size limit")

// identity is who the bot is, for mention detection. Before Run fetched getMe
// only the id (the token's prefix) is known.
func (c *Adapter) identity() (int64, string) {
	if me := c.me.Load(); me != nil {
		return me.ID, me.Username
	}
	return c.bot.ID(), ""
}

// IsDirect implements channels.DirectTeller: a private chat's id is its
// user's id, positive; groups and channels have negative ids.
func (c *Adapter) IsDirect(_ context.Context, t channels.Target) (bool, error) {
	id, err := strconv.ParseInt(t.ChatID, 10, 64)
	if err != nil {
		return false, fmt.Errorf("telegram: chat id %q is not a number", t.ChatID)
	}
	return id > 0, nil
}

// normalize turns an update into a channels.Message; ok is false for updates
// the bot ignores (see the package doc), which are then confirmed.
func (c *Adapter) normalize(ctx context.Context, upd *update) (channels.Message, bool) {
	m := upd.Message
	if m == nil {
		if e := upd.EditedMessage; e != nil {
			c.log.Debug("edited message ignored", "chat", e.Chat.ID, "message_id", e.ID)
		} else {
			c.log.Debug("update ignored", "update_id", upd.ID)
		}
		return channels.Message{}, false
	}
	if m.IsAutomaticForward {
		c.log.Debug("automatic forward from a linked channel ignored", "chat", m.Chat.ID, "message_id", m.ID)
		return channels.Message{}, false
	}
	botID, username := c.identity()
	text, entities := m.Text, m.Entities
	if text == "" && m.Caption != "" {
		text, entities = m.Caption, m.CaptionEntities
	}
	an := analyzeText(text, entities, botID, username)
	if an.otherBot {
		c.log.Debug("command for another bot ignored", "chat", m.Chat.ID, "message_id", m.ID)
		return channels.Message{}, false
	}
	chatID := strconv.FormatInt(m.Chat.ID, 10)
	msg := channels.Message{
		Channel:   "telegram",
		ChatID:    chatID,
		MessageID: chatID + ":" + strconv.Itoa(m.ID),
		Text:      an.text,
		Direct:    m.Chat.Type == models.ChatTypePrivate,
		Mentioned: an.mentioned,
		Time:      time.Unix(int64(m.Date), 0).UTC(),
	}
	if m.IsTopicMessage && m.MessageThreadID != 0 {
		msg.ThreadID = strconv.Itoa(m.MessageThreadID)
	}
	switch {
	case m.SenderChat != nil:
		name := m.SenderChat.Title
		if name == "" {
			name = m.SenderChat.Username
		}
		msg.Sender = channels.Sender{ID: strconv.FormatInt(m.SenderChat.ID, 10), Name: name}
	case m.From != nil:
		msg.Sender = channels.Sender{ID: strconv.FormatInt(m.From.ID, 10), Name: displayName(m.From), IsBot: m.From.IsBot}
		msg.FromSelf = m.From.ID == botID
	}
	// In forum topics every message "replies" to the topic's creation
	// message; only a reply to something else is a real reply.
	if r := m.ReplyToMessage; r != nil && r.ForumTopicCreated == nil {
		msg.ReplyTo = chatID + ":" + strconv.Itoa(r.ID)
		fromBot := r.From != nil && r.From.ID == botID
		if fromBot {
			msg.Mentioned = true
		}
		if qt := strings.TrimSpace(r.Text + r.Caption); qt != "" {
			author := ""
			if r.From != nil {
				author = displayName(r.From)
			}
			msg.Quote = &channels.Quote{Author: author, Text: qt, FromBot: fromBot}
		}
	}
	var note string
	msg.Media, note = c.media(ctx, m)
	if note != "" {
		msg.Text = strings.TrimSpace(msg.Text + "\n" + note)
	}
	if strings.TrimSpace(msg.Text) == "" && len(msg.Media) == 0 {
		if len(m.Photo) > 0 || m.Document != nil || m.Voice != nil || m.Audio != nil {
			c.log.Warn("message with an attachment that could not be used and no text ignored", "chat", m.Chat.ID, "message_id", m.ID)
		} else {
			c.log.Debug("message without text ignored", "chat", m.Chat.ID, "message_id", m.ID)
		}
		return channels.Message{}, false
	}
	return msg, true
}

func displayName(u *models.User) string {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.Username
	}
	return name
}

type analysis struct {
	text      string
	mentioned bool
	otherBot  bool // a leading /command@otherbot
}

type cut struct {
	start, end int
	repl       []uint16
}

// analyzeText finds the bot's mentions (mention "@username", text_mention of
// the bot) and /command@username in entities, whose offsets and lengths are
// UTF-16 code units, and strips them: mentions are removed with one adjacent
// separator, "/cmd@bot" becomes "/cmd". Out-of-range entities are ignored.
func analyzeText(text string, entities []models.MessageEntity, botID int64, username string) analysis {
	u := utf16.Encode([]rune(text))
	var res analysis
	var cuts []cut
	for _, e := range entities {
		if e.Offset < 0 || e.Length <= 0 || e.Offset > len(u) || e.Length > len(u)-e.Offset {
			continue
		}
		seg := string(utf16.Decode(u[e.Offset : e.Offset+e.Length]))
		switch e.Type {
		case models.MessageEntityTypeMention:
			if username != "" && strings.EqualFold(seg, "@"+username) {
				cuts = append(cuts, cut{start: e.Offset, end: e.Offset + e.Length})
				res.mentioned = true
			}
		case models.MessageEntityTypeTextMention:
			if e.User != nil && e.User.ID == botID {
				cuts = append(cuts, cut{start: e.Offset, end: e.Offset + e.Length})
				res.mentioned = true
			}
		case models.MessageEntityTypeBotCommand:
			cmd, target, addressed := strings.Cut(seg, "@")
			if !addressed {
				continue
			}
			if username != "" && strings.EqualFold(target, username) {
				cuts = append(cuts, cut{start: e.Offset, end: e.Offset + e.Length, repl: utf16.Encode([]rune(cmd))})
				res.mentioned = true
			} else if e.Offset == 0 {
				res.otherBot = true
			}
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].start > cuts[j].start })
	floor := len(u) + 1 // start of the last applied cut; later (lower) cuts must end before it
	for _, ct := range cuts {
		if ct.end > floor {
			continue // overlaps a cut already applied
		}
		start, end := ct.start, ct.end
		if ct.repl == nil {
			switch {
			case end < len(u) && start == 0 && (u[end] == ' ' || u[end] == ',' || u[end] == ':'):
				end++
				for end < len(u) && u[end] == ' ' {
					end++
				}
			case end < len(u) && start > 0 && isSpace(u[start-1]) && u[end] == ' ':
				end++
			case start > 0 && u[start-1] == ' ' && (end == len(u) || isPunct(u[end])):
				start--
			}
		}
		floor = start
		nu := make([]uint16, 0, len(u)-(end-start)+len(ct.repl))
		nu = append(nu, u[:start]...)
		nu = append(nu, ct.repl...)
		nu = append(nu, u[end:]...)
		u = nu
	}
	res.text = strings.TrimSpace(string(utf16.Decode(u)))
	return res
}

func isSpace(c uint16) bool { return c == ' ' || c == '\n' || c == '\t' }

func isPunct(c uint16) bool { return strings.ContainsRune(",.!?:;", rune(c)) }

// media downloads the message's attachment, if any, within MaxMediaBytes:
// a photo (its largest size under the bound), a voice note (OGG/Opus), an
// audio file or a document of any type. An attachment that cannot be used
// (over the bound as announced — never downloaded then — or a failed
// download) is dropped with a warning, and note says so in words the user
// will read in the answer.
func (c *Adapter) media(ctx context.Context, m *message) (media []channels.Media, note string) {
	limit := c.opts.MaxMediaBytes
	if limit < 0 {
		return nil, ""
	}
	var fileID, mime, name, kind string
	var size int64
	switch {
	case len(m.Photo) > 0:
		ps := pickPhoto(m.Photo, limit)
		if ps == nil {
			c.log.Warn("photo dropped: every size exceeds max_media_bytes", "chat", m.Chat.ID, "message_id", m.ID, "limit", limit)
			return nil, tooLargeNote("the photo", int64(m.Photo[len(m.Photo)-1].FileSize), limit)
		}
		// Telegram re-encodes every photo as JPEG.
		fileID, mime, kind = ps.FileID, "image/jpeg", "photo"
	case m.Voice != nil:
		fileID, mime, name, size, kind = m.Voice.FileID, "audio/ogg", "voice.ogg", m.Voice.FileSize, "voice note"
	case m.Audio != nil:
		fileID, mime, name, size, kind = m.Audio.FileID, m.Audio.MimeType, m.Audio.FileName, m.Audio.FileSize, "audio"
	case m.Document != nil:
		fileID, mime, name, size, kind = m.Document.FileID, m.Document.MimeType, m.Document.FileName, m.Document.FileSize, "document"
	default:
		return nil, ""
	}
	what := "the " + kind
	if name != "" && kind != "voice note" {
		what = fmt.Sprintf("%s %q", what, name)
	}
	if size > limit {
		c.log.Warn(kind+" dropped: exceeds max_media_bytes", "chat", m.Chat.ID, "message_id", m.ID, "size", size, "limit", limit)
		return nil, tooLargeNote(what, size, limit)
	}
	data, fname, err := c.download(ctx, fileID, limit)
	if err != nil {
		c.log.Warn(kind+" dropped", "chat", m.Chat.ID, "message_id", m.ID, "err", err)
		if errors.Is(err, errTooLarge) {
			return nil, tooLargeNote(what, 0, limit)
		}
		return nil, fmt.Sprintf("[%s could not be downloaded from Telegram]", what)
	}
	if name == "" {
		name = fname
	}
	if mime == "" {
		mime = "application/octet-stream"
	}
	return []channels.Media{{MIME: mime, Name: name, Data: data}}, ""
}

// tooLargeNote tells the user (through the model) that an attachment was
// not downloaded; size 0 = unknown.
func tooLargeNote(what string, size, limit int64) string {
	if size > 0 {
		return fmt.Sprintf("[%s was not downloaded: it is %s, more than the %s channels.telegram.max_media_bytes allows]", what, byteText(size), byteText(limit))
	}
	return fmt.Sprintf("[%s was not downloaded: it is more than the %s channels.telegram.max_media_bytes allows]", what, byteText(limit))
}

func byteText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// pickPhoto returns the largest size whose announced file size fits limit
// (an unknown size is tried; the download is capped anyway).
func pickPhoto(sizes []models.PhotoSize, limit int64) *models.PhotoSize {
	var best *models.PhotoSize
	for i := range sizes {
		p := &sizes[i]
		if int64(p.FileSize) > limit {
			continue
		}
		if best == nil || p.Width*p.Height > best.Width*best.Height ||
			(p.Width*p.Height == best.Width*best.Height && p.FileSize > best.FileSize) {
			best = p
		}
	}
	return best
}

// download fetches a file through getFile and <api>/file/bot<token>/<path>,
// reading at most limit bytes.
func (c *Adapter) download(ctx context.Context, fileID string, limit int64) ([]byte, string, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	f, err := c.bot.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
	if err != nil {
		return nil, "", fmt.Errorf("getFile: %w", c.redact(err))
	}
	if f.FileSize > limit {
		return nil, "", fmt.Errorf("%w: %d > %d bytes", errTooLarge, f.FileSize, limit)
	}
	if f.FilePath == "" {
		return nil, "", errors.New("getFile returned no file_path")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.bot.FileDownloadLink(f), nil)
	if err != nil {
		return nil, "", c.redact(fmt.Errorf("download: %w", err))
	}
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL carries the token
		}
		return nil, "", c.redact(fmt.Errorf("download: %w", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("download: HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", fmt.Errorf("download: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, "", fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
	}
	return data, path.Base(f.FilePath), nil
}
