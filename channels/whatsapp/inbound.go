package whatsapp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// The webhook payload (field "messages" of a whatsapp_business_account
// object), as Meta documents it; only what the adapter reads.
type payload struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string      `json:"field"`
			Value changeValue `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

type changeValue struct {
	MessagingProduct string `json:"messaging_product"`
	Metadata         struct {
		DisplayPhoneNumber string `json:"display_phone_number"`
		PhoneNumberID      string `json:"phone_number_id"`
	} `json:"metadata"`
	Contacts []struct {
		Profile struct {
			Name string `json:"name"`
		} `json:"profile"`
		WaID string `json:"wa_id"`
	} `json:"contacts"`
	// Messages are decoded one by one: one that does not decode is
	// skipped, not the whole delivery.
	Messages []json.RawMessage `json:"messages"`
	Statuses []status          `json:"statuses"`
	Errors   []apiError        `json:"errors"`
}

type inMessage struct {
	From      string     `json:"from"`
	ID        string     `json:"id"`
	Timestamp flexString `json:"timestamp"`
	Type      string     `json:"type"`
	Context   *struct {
		From string `json:"from"`
		ID   string `json:"id"`
	} `json:"context"`
	Text *struct {
		Body string `json:"body"`
	} `json:"text"`
	Image    *mediaRef `json:"image"`
	Sticker  *mediaRef `json:"sticker"`
	Audio    *mediaRef `json:"audio"`
	Video    *mediaRef `json:"video"`
	Document *mediaRef `json:"document"`
	Button   *struct {
		Text string `json:"text"`
	} `json:"button"`
	Interactive *struct {
		ButtonReply *struct {
			Title string `json:"title"`
		} `json:"button_reply"`
		ListReply *struct {
			Title string `json:"title"`
		} `json:"list_reply"`
	} `json:"interactive"`
	Location *struct {
		Latitude  float64 `json:"latitude"`
		Longitude float64 `json:"longitude"`
		Name      string  `json:"name"`
		Address   string  `json:"address"`
	} `json:"location"`
}

type mediaRef struct {
	ID       string `json:"id"`
	MIMEType string `json:"mime_type"`
	SHA256   string `json:"sha256"`
	Caption  string `json:"caption"`
	Filename string `json:"filename"`
	Voice    bool   `json:"voice"`
}

type status struct {
	ID          string     `json:"id"`
	Status      string     `json:"status"` // sent | delivered | read | failed
	RecipientID string     `json:"recipient_id"`
	Errors      []apiError `json:"errors"`
}

type apiError struct {
	Code    int    `json:"code"`
	Title   string `json:"title"`
	Message string `json:"message"`
}

// flexString is a JSON string that also accepts a number (timestamps are
// documented as strings; some senders write numbers).
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = flexString(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("neither a string nor a number: %w", err)
	}
	*f = flexString(n.String())
	return nil
}

// futureSkew is how far in the future a message's timestamp may be.
const futureSkew = 5 * time.Minute

// dispatch hands the payload's messages to the sink in order; the first
// error stops (the whole delivery is repeated by Meta).
func (c *Adapter) dispatch(ctx context.Context, sink channels.Sink, p *payload) error {
	if p.Object != "whatsapp_business_account" {
		c.log.Debug("whatsapp: ignoring a delivery for another object", "object", p.Object)
		return nil
	}
	for _, e := range p.Entry {
		for _, ch := range e.Changes {
			if ch.Field != "messages" {
				continue
			}
			v := &ch.Value
			if v.Metadata.PhoneNumberID != c.opts.PhoneNumberID {
				c.log.Debug("whatsapp: ignoring a change for another phone number", "phone_number_id", v.Metadata.PhoneNumberID)
				continue
			}
			c.logStatuses(v)
			for _, raw := range v.Messages {
				var m inMessage
				if err := json.Unmarshal(raw, &m); err != nil {
					c.log.Warn("whatsapp: skipping an undecodable message", "err", err)
					continue
				}
				if err := c.deliver(ctx, sink, v, &m); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// deliver normalizes one message and hands it to the sink under its chat's lock.
func (c *Adapter) deliver(ctx context.Context, sink channels.Sink, v *changeValue, m *inMessage) error {
	waID := digitsOnly(m.From)
	if waID == "" || m.ID == "" {
		c.log.Debug("whatsapp: ignoring a message without sender or id", "type", m.Type)
		return nil
	}
	if own := digitsOnly(v.Metadata.DisplayPhoneNumber); own != "" && waID == own {
		c.log.Debug("whatsapp: ignoring a message from the business's own number", "message_id", m.ID)
		return nil
	}
	sec, err := strconv.ParseInt(string(m.Timestamp), 10, 64)
	if err != nil {
		c.log.Warn("whatsapp: dropping a message with an unreadable timestamp", "message_id", m.ID)
		return nil
	}
	at, now := time.Unix(sec, 0), c.opts.Now()
	if age := now.Sub(at); age > c.opts.MaxAge || age < -futureSkew {
		c.log.Warn("whatsapp: dropping a stale message (outside the accepted window)", "message_id", m.ID, "age", age.Round(time.Second))
		return nil
	}
	chat := "+" + waID
	unlock := c.chatMu.Lock(chat)
	defer unlock()
	msg := channels.Message{
		Channel:   Name,
		ChatID:    chat,
		MessageID: m.ID,
		Sender:    channels.Sender{ID: chat, Name: contactName(v, waID)},
		Direct:    true,
		Time:      at,
	}
	if m.Context != nil && m.Context.ID != "" {
		msg.ReplyTo, msg.Mentioned = m.Context.ID, true
	}
	ok, err := c.content(ctx, m, &msg)
	if err != nil {
		return err
	}
	if !ok {
		c.log.Debug("whatsapp: ignoring a message of an unhandled type", "type", m.Type, "message_id", m.ID)
		return nil
	}
	if err := sink.Handle(ctx, msg); err != nil {
		return fmt.Errorf("handle %s: %w", m.ID, err)
	}
	c.setLastReceived(chat, m.ID)
	return nil
}

// content fills Text and Media; ok is false for types the bot ignores.
func (c *Adapter) content(ctx context.Context, m *inMessage, msg *channels.Message) (ok bool, err error) {
	var ref *mediaRef
	kind := m.Type
	switch m.Type {
	case "text":
		if m.Text == nil {
			return false, nil
		}
		msg.Text = m.Text.Body
		return true, nil
	case "button":
		if m.Button == nil {
			return false, nil
		}
		msg.Text = m.Button.Text
		return true, nil
	case "interactive":
		switch {
		case m.Interactive == nil:
			return false, nil
		case m.Interactive.ButtonReply != nil:
			msg.Text = m.Interactive.ButtonReply.Title
		case m.Interactive.ListReply != nil:
			msg.Text = m.Interactive.ListReply.Title
		default:
			return false, nil
		}
		return true, nil
	case "location":
		if m.Location == nil {
			return false, nil
		}
		l := m.Location
		msg.Text = strings.TrimSpace(fmt.Sprintf("[location %.6f,%.6f] %s %s", l.Latitude, l.Longitude, l.Name, l.Address))
		return true, nil
	case "image":
		ref = m.Image
	case "sticker":
		ref = m.Sticker
	case "audio":
		ref = m.Audio
		if ref != nil && ref.Voice {
			kind = "voice note"
		}
	case "video":
		ref = m.Video
	case "document":
		ref = m.Document
	default:
		return false, nil // reaction, contacts, order, system, unsupported, …
	}
	if ref == nil || ref.ID == "" {
		return false, nil
	}
	msg.Text = ref.Caption
	media, err := c.download(ctx, ref)
	var dropped *droppedError
	switch {
	case errors.As(err, &dropped):
		c.log.Warn("whatsapp: attachment dropped", "message_id", m.ID, "type", m.Type, "reason", dropped.reason)
		note := fmt.Sprintf("[the user sent a %s that could not be received: %s]", kind, dropped.reason)
		msg.Text = strings.TrimSpace(msg.Text + "\n" + note)
		return true, nil
	case err != nil:
		return false, fmt.Errorf("download %s of %s: %w", m.Type, m.ID, err)
	}
	msg.Media = []channels.Media{media}
	return true, nil
}

// droppedError is a download the platform refused for good.
type droppedError struct{ reason string }

func (e *droppedError) Error() string { return e.reason }

// mediaInfo is GET /{media-id}'s answer.
type mediaInfo struct {
	URL      string `json:"url"`
	MIMEType string `json:"mime_type"`
	SHA256   string `json:"sha256"`
	FileSize int64  `json:"file_size"`
}

// download resolves a media id and fetches its bytes, at most MaxMediaBytes.
// A *droppedError is final (the attachment is dropped); other errors are
// temporary.
func (c *Adapter) download(ctx context.Context, ref *mediaRef) (channels.Media, error) {
	limit := c.opts.MaxMediaBytes
	var info mediaInfo
	if err := c.getJSON(ctx, c.base+"/"+pathEscape(ref.ID), &info); err != nil {
		return channels.Media{}, finalOrTemporary(err)
	}
	if info.FileSize > limit {
		return channels.Media{}, &droppedError{fmt.Sprintf("it is %s, more than the %s allowed", sizeText(info.FileSize), sizeText(limit))}
	}
	if !c.mayCarryToken(info.URL) {
		return channels.Media{}, &droppedError{"WhatsApp gave a media URL on an unexpected host"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, info.URL, nil)
	if err != nil {
		return channels.Media{}, &droppedError{"WhatsApp gave an unusable media URL"}
	}
	req.Header.Set("Authorization", "Bearer "+c.opts.AccessToken)
	resp, err := c.media.Do(req)
	if err != nil {
		return channels.Media{}, fmt.Errorf("media download: %w", scrubURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		err := fmt.Errorf("media download answered HTTP %d", resp.StatusCode)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return channels.Media{}, err
		}
		return channels.Media{}, &droppedError{err.Error()}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return channels.Media{}, fmt.Errorf("media download: %w", err)
	}
	if int64(len(data)) > limit {
		return channels.Media{}, &droppedError{fmt.Sprintf("it is more than the %s allowed", sizeText(limit))}
	}
	// Both the webhook and the media record announce the checksum; the
	// bytes must match each one given.
	sum := sha256.Sum256(data)
	got := hex.EncodeToString(sum[:])
	for _, want := range []string{ref.SHA256, info.SHA256} {
		if want != "" && !strings.EqualFold(got, want) {
			return channels.Media{}, &droppedError{"its checksum does not match what WhatsApp announced"}
		}
	}
	mime := info.MIMEType
	if mime == "" {
		mime = ref.MIMEType
	}
	if i := strings.IndexByte(mime, ';'); i >= 0 && !strings.HasPrefix(mime, "audio/") {
		mime = strings.TrimSpace(mime[:i])
	}
	return channels.Media{MIME: mime, Name: ref.Filename, Data: data}, nil
}

// mayCarryToken reports whether the bearer token may go to u: HTTPS, or
// the configured API's own scheme and host (a local proxy or test server).
func (c *Adapter) mayCarryToken(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	api, err := url.Parse(c.opts.APIURL)
	return err == nil && u.Scheme == api.Scheme && u.Host == api.Host
}

// finalOrTemporary classifies a Graph error of a media lookup.
func finalOrTemporary(err error) error {
	var ge *GraphError
	if errors.As(err, &ge) && ge.Status < 500 && ge.Status != http.StatusTooManyRequests {
		return &droppedError{"WhatsApp refused the media lookup: " + ge.Error()}
	}
	return err
}

// logStatuses reports failed deliveries of the bot's messages.
func (c *Adapter) logStatuses(v *changeValue) {
	for _, s := range v.Statuses {
		if s.Status != "failed" {
			continue
		}
		reason := "no reason given"
		if len(s.Errors) > 0 {
			e := s.Errors[0]
			reason = fmt.Sprintf("%d %s", e.Code, oneLine(e.Title))
			if e.Code == codeReengagement {
				reason += ": the user's last message is more than 24 hours old; only a template can reach them"
			}
		}
		c.log.Warn("whatsapp: WhatsApp reports a message of the bot as failed", "message_id", s.ID, "recipient", "+"+digitsOnly(s.RecipientID), "reason", reason)
	}
	for _, e := range v.Errors {
		c.log.Warn("whatsapp: WhatsApp reports an error", "code", e.Code, "title", oneLine(e.Title))
	}
}

func contactName(v *changeValue, waID string) string {
	for _, ct := range v.Contacts {
		if digitsOnly(ct.WaID) == waID {
			return ct.Profile.Name
		}
	}
	return ""
}

// digitsOnly keeps the digits of a phone number ("+49 151-123" → "49151123").
func digitsOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// oneLine keeps a platform message to one short line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
