package slack

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/switchboard-bot/switchboard/channels"
)

// deliveredSubtypes are the message subtypes that are a person's new message.
// Everything else (message_changed, message_deleted, channel_join, bot_message,
// hidden subtypes…) is not a turn.
var deliveredSubtypes = map[string]bool{"": true, "file_share": true, "thread_broadcast": true}

const maxNameCache = 10000

// inbound is the platform-neutral view of a message or app_mention event.
type inbound struct {
	channel, channelType, user, botID, text, ts, threadTS, parentUser string
	files                                                             []slackapi.File
	appMention                                                        bool
}

// IsDirect implements channels.DirectTeller: direct message conversations
// have ids starting with D (as buildMessage decides without a channel type).
func (c *Adapter) IsDirect(_ context.Context, t channels.Target) (bool, error) {
	return strings.HasPrefix(t.ChatID, "D"), nil
}

// normalize turns a parsed Events API event into a message. deliver is false for
// events that are not a turn (the bot's own messages, edits, joins, …); those
// are acknowledged without calling the sink.
func (c *Adapter) normalize(ctx context.Context, ev slackevents.EventsAPIEvent) (channels.Message, bool) {
	if ev.Type != slackevents.CallbackEvent {
		return channels.Message{}, false
	}
	var in inbound
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.MessageEvent:
		if !deliveredSubtypes[e.SubType] || (e.Message != nil && e.Message.Hidden) {
			return channels.Message{}, false
		}
		in = inbound{channel: e.Channel, channelType: e.ChannelType, user: e.User, botID: e.BotID,
			text: e.Text, ts: e.TimeStamp, threadTS: e.ThreadTimeStamp}
		if e.Message != nil {
			in.files = e.Message.Files
			in.parentUser = e.Message.ParentUserId
			if in.botID == "" {
				in.botID = e.Message.BotID
			}
		}
	case *slackevents.AppMentionEvent:
		if e.Edited != nil {
			return channels.Message{}, false // an edit that adds a mention is not a new message
		}
		in = inbound{channel: e.Channel, user: e.User, botID: e.BotID, text: e.Text, ts: e.TimeStamp,
			threadTS: e.ThreadTimeStamp, files: e.Files, appMention: true}
	case *slackevents.AssistantThreadStartedEvent:
		c.rememberAssistantThread(e.AssistantThread.ChannelID, e.AssistantThread.ThreadTimeStamp)
		return channels.Message{}, false
	default:
		return channels.Message{}, false
	}
	if in.channel == "" || in.ts == "" {
		return channels.Message{}, false
	}
	return c.buildMessage(ctx, in)
}

func (c *Adapter) buildMessage(ctx context.Context, in inbound) (channels.Message, bool) {
	botUser, botID := c.BotUserID(), c.botBotID()
	if (botUser != "" && in.user == botUser) || (botID != "" && in.botID == botID) {
		return channels.Message{}, false // our own post echoed back
	}
	direct := in.channelType == slackevents.ChannelTypeIM || (in.channelType == "" && strings.HasPrefix(in.channel, "D"))
	mention := botUser != "" && c.mentionPattern(botUser).MatchString(in.text)
	threadTS := in.threadTS
	if threadTS == in.ts {
		threadTS = "" // the thread's root itself
	}
	// A reply in a thread the bot is already answering in is addressed to it,
	// like a reply to one of its messages.
	mentioned := in.appMention || mention || (botUser != "" && in.parentUser == botUser) ||
		(threadTS != "" && c.inJoinedThread(in.channel, threadTS))
	msg := channels.Message{
		Channel:   "slack",
		ChatID:    in.channel,
		MessageID: in.channel + ":" + in.ts,
		Sender:    channels.Sender{ID: in.user, IsBot: in.botID != ""},
		Text:      in.text,
		Direct:    direct,
		Mentioned: mentioned,
		Time:      tsTime(in.ts),
	}
	if botUser != "" {
		msg.Text = stripMention(in.text, botUser)
	}
	switch {
	case threadTS != "":
		msg.ThreadID = threadTS
		msg.ReplyTo = in.channel + ":" + threadTS
	case !direct && (in.appMention || mention) && c.threadReplies:
		msg.ThreadID = in.ts
	}
	if msg.Sender.ID == "" {
		msg.Sender.ID = in.botID
	}
	if in.user != "" && in.botID == "" {
		msg.Sender.Name = c.userName(ctx, in.user)
	}
	msg.Media = c.downloadMedia(ctx, in.files)
	return msg, true
}

// mentionRE matches "<@U123>" and "<@U123|name>".
func mentionRE(user string) *regexp.Regexp {
	return regexp.MustCompile(`<@` + regexp.QuoteMeta(user) + `(?:\|[^>]*)?>`)
}

// stripMention removes the bot's mentions from text, with the spaces before
// them, keeping the words around them apart ("hey <@U1>, ping" → "hey, ping";
// "<@U1>: help" → "help").
func stripMention(text, user string) string {
	re := mentionRE(user)
	locs := re.FindAllStringIndex(text, -1)
	if len(locs) == 0 {
		return text
	}
	var b strings.Builder
	prev := 0
	for _, l := range locs {
		b.WriteString(strings.TrimRight(text[prev:l[0]], " \t"))
		rest := text[l[1]:]
		before := b.String()
		if before != "" && !strings.HasSuffix(before, "\n") && rest != "" && !strings.ContainsAny(rest[:1], " \t\n,.:;!?") {
			b.WriteByte(' ')
		}
		prev = l[1]
	}
	b.WriteString(text[prev:])
	out := strings.TrimSpace(b.String())
	out = strings.TrimLeft(out, ",:; \t")
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// tsTime parses a Slack ts ("1700000000.000100") into a time.
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	var us int64
	if frac != "" {
		frac = (frac + "000000")[:6]
		us, _ = strconv.ParseInt(frac, 10, 64)
	}
	return time.Unix(s, us*1000).UTC()
}

// userName resolves a user id to a display name with users.info (cached;
// failures cache the empty name so a missing users:read scope costs one call).
func (c *Adapter) userName(ctx context.Context, user string) string {
	c.namesMu.Lock()
	name, ok := c.names[user]
	c.namesMu.Unlock()
	if ok {
		return name
	}
	uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	u, err := c.api.GetUserInfoContext(uctx, user)
	if err != nil {
		c.log.Debug("slack: users.info failed; sender name unknown", "user", user, "err", err)
		if ctx.Err() != nil || uctx.Err() != nil {
			return "" // do not cache a timeout
		}
	} else {
		name = firstNonEmpty(u.Profile.DisplayName, u.RealName, u.Profile.RealName, u.Name)
	}
	c.namesMu.Lock()
	if len(c.names) >= maxNameCache {
		clear(c.names)
	}
	c.names[user] = name
	c.namesMu.Unlock()
	return name
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// errTooLarge stops a download that exceeds MaxMediaBytes.
var errTooLarge = errors.New("file exceeds the media size limit")

type cappedBuffer struct {
	buf   []byte
	limit int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if int64(len(b.buf)+len(p)) > b.limit {
		return 0, errTooLarge
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// downloadMedia fetches files of any type (images, audio, documents:
// agent/media decides what they become) from url_private with the bot
// token's authorization, skipping any announced over MaxMediaBytes before
// the download and cutting any that turns out larger while reading.
func (c *Adapter) downloadMedia(ctx context.Context, files []slackapi.File) []channels.Media {
	var out []channels.Media
	for _, f := range files {
		if int64(f.Size) > c.opts.MaxMediaBytes {
			c.log.Info("slack: file skipped: over the media size limit", "file", f.ID, "size", f.Size, "limit", c.opts.MaxMediaBytes)
			continue
		}
		u := firstNonEmpty(f.URLPrivateDownload, f.URLPrivate)
		if u == "" {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		buf := &cappedBuffer{limit: c.opts.MaxMediaBytes}
		err := c.api.GetFileContext(dctx, u, buf)
		cancel()
		if err != nil {
			c.log.Warn("slack: file download failed", "file", f.ID, "err", fmt.Errorf("%w", err))
			continue
		}
		out = append(out, channels.Media{MIME: f.Mimetype, Name: f.Name, Data: buf.buf})
	}
	return out
}

func (c *Adapter) rememberAssistantThread(channel, threadTS string) {
	if channel == "" || threadTS == "" {
		return
	}
	c.assistantMu.Lock()
	defer c.assistantMu.Unlock()
	if len(c.assistant) >= maxNameCache {
		clear(c.assistant)
	}
	c.assistant[channel+":"+threadTS] = true
}

// rememberJoinedThread records a thread the bot posted into (memory only:
// after a restart a mention brings the bot back into the thread).
func (c *Adapter) rememberJoinedThread(t channels.Target) {
	if t.ThreadID == "" {
		return
	}
	c.assistantMu.Lock()
	defer c.assistantMu.Unlock()
	if c.joined == nil || len(c.joined) >= maxNameCache {
		c.joined = map[string]bool{}
	}
	c.joined[t.ChatID+":"+t.ThreadID] = true
}

func (c *Adapter) inJoinedThread(channel, threadTS string) bool {
	c.assistantMu.Lock()
	defer c.assistantMu.Unlock()
	return c.joined[channel+":"+threadTS]
}

func (c *Adapter) isAssistantThread(t channels.Target) bool {
	if t.ThreadID == "" {
		return false
	}
	c.assistantMu.Lock()
	defer c.assistantMu.Unlock()
	return c.assistant[t.ChatID+":"+t.ThreadID]
}

// mentionPattern returns the cached mention regexp for the bot's user id.
func (c *Adapter) mentionPattern(user string) *regexp.Regexp {
	c.namesMu.Lock()
	defer c.namesMu.Unlock()
	if c.mentionRE == nil || c.mentionUser != user {
		c.mentionRE, c.mentionUser = mentionRE(user), user
	}
	return c.mentionRE
}
