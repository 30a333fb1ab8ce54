package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
)

// chanInfo is what the adapter needs to know about a Discord channel.
type chanInfo struct {
	guildID  string
	parentID string
	thread   bool
	dm       bool
}

// live handles one gateway message.
func (r *run) live(m *discordgo.Message) {
	c := r.c
	if m.Author == nil || m.ChannelID == "" || m.ID == "" {
		return
	}
	if m.GuildID != "" && len(c.guilds) > 0 && !c.guilds[m.GuildID] {
		return
	}
	cur, known := c.cursorOf(m.ChannelID)
	if known && !snowLess(cur.last, m.ID) {
		return // already delivered (RESUME replay after a history fetch)
	}
	if known && cur.behind {
		r.catchUp(m.ChannelID)
		return
	}
	if !known {
		// Start tracking just before this message so a failure can be caught
		// up from history — and save that before handing the message on, so
		// even a crash right now is caught up by the next process.
		c.setCursor(m.ChannelID, snowPred(m.ID))
		c.saveCursors(r.ctx)
	}
	r.deliver(m)
}

// deliver normalizes m and hands it to the sink, moving the channel's cursor
// only when the sink accepted it (or it was dropped on purpose). It reports
// whether the caller may continue with later messages of the channel.
func (r *run) deliver(m *discordgo.Message) bool {
	c := r.c
	msg, ok := c.normalize(r.ctx, m)
	if !ok {
		c.setCursor(m.ChannelID, m.ID)
		return true
	}
	if err := r.sink.Handle(r.ctx, msg); err != nil {
		if r.ctx.Err() == nil {
			c.log.Warn("discord: sink did not accept the message; will catch up from history",
				"chat", m.ChannelID, "message_id", m.ID, "err", err)
		}
		c.markBehind(m.ChannelID)
		return false
	}
	c.setCursor(m.ChannelID, m.ID)
	return true
}

// catchUp fetches and delivers, in order, the messages of channelID after its
// cursor.
func (r *run) catchUp(channelID string) {
	c := r.c
	cur, ok := c.cursorOf(channelID)
	if !ok {
		return
	}
	after := cur.last
	const limit = 100
	for page := 0; page < 20; page++ {
		if r.ctx.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(r.ctx, c.opts.RequestTimeout)
		msgs, err := c.rest.ChannelMessages(channelID, limit, "", after, "", discordgo.WithContext(ctx))
		cancel()
		if err != nil {
			var re *discordgo.RESTError
			if errors.As(err, &re) && re.Response != nil && (re.Response.StatusCode == http.StatusNotFound || re.Response.StatusCode == http.StatusForbidden) {
				c.log.Info("discord: channel no longer readable, forgetting it", "chat", channelID, "status", re.Response.StatusCode)
				c.forget(channelID)
				return
			}
			if r.ctx.Err() == nil {
				c.log.Warn("discord: fetching missed messages failed", "chat", channelID, "err", err)
			}
			c.markBehind(channelID)
			return
		}
		sort.Slice(msgs, func(i, j int) bool { return snowLess(msgs[i].ID, msgs[j].ID) })
		info := c.cachedInfo(channelID)
		for _, m := range msgs {
			if m == nil || m.Author == nil {
				continue
			}
			if cur, _ := c.cursorOf(channelID); !snowLess(cur.last, m.ID) {
				continue
			}
			if m.ChannelID == "" {
				m.ChannelID = channelID
			}
			if m.GuildID == "" && info != nil {
				m.GuildID = info.guildID // REST messages omit guild_id
			}
			if !r.deliver(m) {
				return
			}
			after = m.ID
		}
		if len(msgs) < limit {
			break
		}
	}
	c.clearBehind(channelID)
}

var mentionRE = regexp.MustCompile(`\s*<@!?(\d+)>\s*`)

// normalize builds the channels.Message for m; false means "drop".
func (c *Adapter) normalize(ctx context.Context, m *discordgo.Message) (channels.Message, bool) {
	botID := c.bot()
	if botID != "" && m.Author.ID == botID {
		return channels.Message{}, false // our own message
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return channels.Message{}, false // joins, pins, thread notices, ...
	}
	isBot := m.Author.Bot || m.WebhookID != ""
	if isBot && !c.opts.AllowBots {
		return channels.Message{}, false
	}
	msg := channels.Message{
		Channel:   Name,
		ChatID:    m.ChannelID,
		MessageID: m.ID,
		Sender:    channels.Sender{ID: m.Author.ID, Name: displayName(m), IsBot: isBot},
		Direct:    m.GuildID == "",
		Time:      m.Timestamp,
	}
	if msg.Time.IsZero() {
		msg.Time = snowTime(m.ID)
	}
	if msg.Direct {
		c.rememberDM(m.ChannelID)
	} else if info := c.channelInfo(ctx, m.ChannelID, m.GuildID); info.thread && info.parentID != "" {
		msg.ChatID = info.parentID
		msg.ThreadID = m.ChannelID
		msg.ParentID = info.parentID
	}

	text := m.Content
	if botID != "" {
		for _, u := range m.Mentions {
			if u != nil && u.ID == botID {
				msg.Mentioned = true
			}
		}
		stripped := mentionRE.ReplaceAllStringFunc(text, func(s string) string {
			if mentionRE.FindStringSubmatch(s)[1] != botID {
				return s
			}
			msg.Mentioned = true
			return " "
		})
		text = strings.TrimSpace(stripped)
	}
	msg.Text = text
	if ref := m.MessageReference; ref != nil && ref.MessageID != "" {
		msg.ReplyTo = ref.MessageID
		if rm := m.ReferencedMessage; rm != nil && rm.Author != nil {
			fromBot := botID != "" && rm.Author.ID == botID
			if fromBot {
				msg.Mentioned = true
			}
			if qt := strings.TrimSpace(rm.Content); qt != "" {
				msg.Quote = &channels.Quote{Author: displayName(rm), Text: qt, FromBot: fromBot}
			}
		}
	}
	msg.Media = c.downloadMedia(ctx, m)
	return msg, true
}

func displayName(m *discordgo.Message) string {
	if m.Member != nil && m.Member.Nick != "" {
		return m.Member.Nick
	}
	if m.Author.GlobalName != "" {
		return m.Author.GlobalName
	}
	return m.Author.Username
}

// downloadMedia fetches attachments of any type (images, audio, documents:
// agent/media decides what they become) through the injected client,
// skipping any announced larger than MaxMediaBytes before the download and
// cutting any that turns out larger while reading. Failures are logged and
// skipped.
func (c *Adapter) downloadMedia(ctx context.Context, m *discordgo.Message) []channels.Media {
	limit := c.opts.MaxMediaBytes
	if limit < 0 {
		return nil
	}
	var out []channels.Media
	for _, a := range m.Attachments {
		if a == nil || a.URL == "" {
			continue
		}
		if int64(a.Size) > limit {
			c.log.Info("discord: attachment over the size cap, skipped", "message_id", m.ID, "size", a.Size, "cap", limit)
			continue
		}
		data, ctype, err := c.fetch(ctx, a.URL, limit)
		if err != nil {
			c.log.Warn("discord: attachment download failed", "message_id", m.ID, "err", err)
			continue
		}
		mt := a.ContentType
		if mt == "" {
			mt = ctype
		}
		if mt == "" {
			mt = http.DetectContentType(data)
		}
		out = append(out, channels.Media{MIME: mt, Name: a.Filename, Data: data})
	}
	return out
}

func (c *Adapter) fetch(ctx context.Context, u string, limit int64) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("GET attachment: HTTP %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(data)) > limit {
		return nil, "", fmt.Errorf("attachment exceeds %d bytes", limit)
	}
	return data, resp.Header.Get("Content-Type"), nil
}

// ---- channel info ----

func (c *Adapter) rememberChannel(ch *discordgo.Channel) {
	if ch == nil || ch.ID == "" {
		return
	}
	info := chanInfo{guildID: ch.GuildID, parentID: ch.ParentID, thread: ch.IsThread(),
		dm: ch.Type == discordgo.ChannelTypeDM || ch.Type == discordgo.ChannelTypeGroupDM}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putInfoLocked(ch.ID, info)
}

func (c *Adapter) rememberDM(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putInfoLocked(id, chanInfo{dm: true})
}

func (c *Adapter) putInfoLocked(id string, info chanInfo) {
	if len(c.chans) >= 20000 {
		clear(c.chans) // crude bound; entries are re-learned on demand
	}
	c.chans[id] = info
}

func (c *Adapter) cachedInfo(id string) *chanInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if info, ok := c.chans[id]; ok {
		return &info
	}
	return nil
}

// IsDirect implements channels.DirectTeller: a DM (or group DM) channel,
// from the gateway's announcements or GET /channels/{id}.
func (c *Adapter) IsDirect(ctx context.Context, t channels.Target) (bool, error) {
	if info := c.cachedInfo(t.ChatID); info != nil {
		return info.dm, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	ch, err := c.rest.Channel(t.ChatID, discordgo.WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("discord: look up channel %s: %w", t.ChatID, err)
	}
	c.rememberChannel(ch)
	return ch.Type == discordgo.ChannelTypeDM || ch.Type == discordgo.ChannelTypeGroupDM, nil
}

func (c *Adapter) isDM(id string) bool {
	info := c.cachedInfo(id)
	return info != nil && info.dm
}

// channelInfo returns what is known about a guild channel, asking the API
// (GET /channels/{id}) when it was not announced by the gateway.
func (c *Adapter) channelInfo(ctx context.Context, id, guildID string) chanInfo {
	if info := c.cachedInfo(id); info != nil {
		return *info
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	ch, err := c.rest.Channel(id, discordgo.WithContext(ctx))
	if err != nil {
		c.log.Warn("discord: channel lookup failed; treating it as a plain channel", "chat", id, "err", err)
		return chanInfo{guildID: guildID}
	}
	if ch.GuildID == "" {
		ch.GuildID = guildID
	}
	c.rememberChannel(ch)
	return *c.cachedInfo(id)
}

// ---- snowflakes ----

// snowLess compares two snowflakes numerically.
func snowLess(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// snowPred returns id-1 (the "after" value that includes id).
func snowPred(id string) string {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || n == 0 {
		return "0"
	}
	return strconv.FormatUint(n-1, 10)
}

// snowTime is the creation time encoded in a snowflake.
func snowTime(id string) time.Time {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(int64(n>>22) + 1420070400000)
}
