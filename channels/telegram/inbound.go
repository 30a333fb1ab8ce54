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
func (c *Adapter) normalize(ctx context.Context, upd *models.Update) (channels.Message, bool) {
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
	msg.Media = c.media(ctx, m)
	if strings.TrimSpace(msg.Text) == "" && len(msg.Media) == 0 {
		if len(m.Photo) > 0 || m.Document != nil {
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

// media downloads the message's image, if any, within MaxMediaBytes.
func (c *Adapter) media(ctx context.Context, m *models.Message) []channels.Media {
	limit := c.opts.MaxMediaBytes
	if limit < 0 {
		return nil
	}
	switch {
	case len(m.Photo) > 0:
		ps := pickPhoto(m.Photo, limit)
		if ps == nil {
			c.log.Warn("photo dropped: every size exceeds max_media_bytes", "chat", m.Chat.ID, "message_id", m.ID, "limit", limit)
			return nil
		}
		data, name, err := c.download(ctx, ps.FileID, limit)
		if err != nil {
			c.log.Warn("photo dropped", "chat", m.Chat.ID, "message_id", m.ID, "err", err)
			return nil
		}
		// Telegram re-encodes every photo as JPEG.
		return []channels.Media{{MIME: "image/jpeg", Name: name, Data: data}}
	case m.Document != nil && strings.HasPrefix(m.Document.MimeType, "image/"):
		d := m.Document
		if d.FileSize > limit {
			c.log.Warn("image document dropped: exceeds max_media_bytes", "chat", m.Chat.ID, "message_id", m.ID, "size", d.FileSize, "limit", limit)
			return nil
		}
		data, name, err := c.download(ctx, d.FileID, limit)
		if err != nil {
			c.log.Warn("image document dropped", "chat", m.Chat.ID, "message_id", m.ID, "err", err)
			return nil
		}
		if d.FileName != "" {
			name = d.FileName
		}
		return []channels.Media{{MIME: d.MimeType, Name: name, Data: data}}
	}
	return nil
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
