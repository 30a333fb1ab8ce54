package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// Graph error codes the adapter tells apart.
const (
	codeReengagement = 131047 // more than 24 hours since the user's last message
)

// rateLimitCodes maps WhatsApp's throttling codes to the wait used when
// the answer carries no Retry-After: 131056 is the per-user pair limit
// (about one message every 6 s), the others account or app throughput.
var rateLimitCodes = map[int]time.Duration{
	130429: 5 * time.Second,  // Cloud API throughput reached
	131056: 6 * time.Second,  // pair rate limit (same recipient)
	131048: 60 * time.Second, // spam rate limit
	80007:  60 * time.Second, // WhatsApp Business Account rate limit
	4:      60 * time.Second, // application request limit
	613:    60 * time.Second, // calls within one hour exceeded
}

// temporaryCodes are errors WhatsApp documents as transient (nothing sent).
var temporaryCodes = map[int]bool{1: true, 2: true, 131000: true, 131016: true}

// outMessage is POST /{phone-number-id}/messages.
type outMessage struct {
	MessagingProduct string       `json:"messaging_product"`
	RecipientType    string       `json:"recipient_type,omitempty"`
	To               string       `json:"to,omitempty"`
	Type             string       `json:"type,omitempty"`
	Text             *outText     `json:"text,omitempty"`
	Template         *outTemplate `json:"template,omitempty"`
	CallbackData     string       `json:"biz_opaque_callback_data,omitempty"`
	// read receipts and typing
	Status          string           `json:"status,omitempty"`
	MessageID       string           `json:"message_id,omitempty"`
	TypingIndicator *typingIndicator `json:"typing_indicator,omitempty"`
}

type outText struct {
	Body       string `json:"body"`
	PreviewURL bool   `json:"preview_url"`
}

type outTemplate struct {
	Name     string `json:"name"`
	Language struct {
		Code string `json:"code"`
	} `json:"language"`
	Components []templateComponent `json:"components,omitempty"`
}

type templateComponent struct {
	Type       string          `json:"type"`
	Parameters []templateParam `json:"parameters"`
}

type templateParam struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type typingIndicator struct {
	Type string `json:"type"`
}

type sendAnswer struct {
	Messages []struct {
		ID string `json:"id"`
	} `json:"messages"`
}

// maxTemplateParam bounds a template's body parameter.
const maxTemplateParam = 1000

// Send delivers one chunk as a text message and returns its wamid. Outside
// the 24-hour window a delivery with a purpose goes as that purpose's
// template, if one is configured.
func (c *Adapter) Send(ctx context.Context, out channels.Outgoing) (string, error) {
	to := digitsOnly(out.Target.ChatID)
	if to == "" {
		return "", channels.Permanent(fmt.Errorf("whatsapp: send: %q is not a phone number", out.Target.ChatID))
	}
	text := out.Text
	if strings.TrimSpace(text) == "" {
		text = out.Plain
	}
	if strings.TrimSpace(text) == "" {
		return "", channels.Permanent(errors.New("whatsapp: send: empty message"))
	}
	msg := outMessage{MessagingProduct: "whatsapp", RecipientType: "individual", To: to, Type: "text",
		Text: &outText{Body: text}, CallbackData: out.Nonce}
	id, err := c.post(ctx, msg)
	var ge *GraphError
	if errors.As(err, &ge) && ge.Code == codeReengagement {
		purpose := channels.PurposeOf(ctx)
		if tpl, ok := c.opts.Templates[string(purpose)]; ok {
			return c.sendTemplate(ctx, to, tpl, out)
		}
		why := "no template is configured for it"
		if purpose == "" {
			why = "it is no greeting or reminder, which may use a template"
		}
		return "", channels.Permanent(fmt.Errorf("whatsapp: not sent: %s's last message is more than 24 hours old, so WhatsApp refuses free-form messages (131047), and %s: %w", "+"+to, why, err))
	}
	if err != nil {
		return "", c.classify(ctx, "send", err)
	}
	return id, nil
}

// sendTemplate sends tpl with the chunk's plain text as its {{1}}.
func (c *Adapter) sendTemplate(ctx context.Context, to string, tpl Template, out channels.Outgoing) (string, error) {
	param := out.Plain
	if strings.TrimSpace(param) == "" {
		param = out.Text
	}
	// WhatsApp refuses line breaks, tabs and more than four spaces in a row
	// in a parameter.
	param = strings.Join(strings.Fields(param), " ")
	if r := []rune(param); len(r) > maxTemplateParam {
		param = string(r[:maxTemplateParam-1]) + "…"
	}
	t := &outTemplate{Name: tpl.Name,
		Components: []templateComponent{{Type: "body", Parameters: []templateParam{{Type: "text", Text: param}}}}}
	t.Language.Code = tpl.Language
	id, err := c.post(ctx, outMessage{MessagingProduct: "whatsapp", RecipientType: "individual", To: to,
		Type: "template", Template: t, CallbackData: out.Nonce})
	if err != nil {
		return "", c.classify(ctx, "send template "+tpl.Name, err)
	}
	c.log.Info("whatsapp: sent a template outside the 24-hour window", "to", "+"+to, "template", tpl.Name)
	return id, nil
}

// post sends a message and returns its wamid.
func (c *Adapter) post(ctx context.Context, msg outMessage) (string, error) {
	var ans sendAnswer
	if err := c.do(ctx, http.MethodPost, c.base+"/"+pathEscape(c.opts.PhoneNumberID)+"/messages", msg, &ans); err != nil {
		return "", err
	}
	if len(ans.Messages) == 0 || ans.Messages[0].ID == "" {
		return "", errors.New("graph API accepted the message but returned no message id")
	}
	return ans.Messages[0].ID, nil
}

// classify maps a Graph or transport error to the shared error kinds.
func (c *Adapter) classify(ctx context.Context, op string, err error) error {
	wrapped := fmt.Errorf("whatsapp: %s: %w", op, err)
	var ge *GraphError
	var te *transportError
	switch {
	case errors.As(err, &ge):
		if d, ok := rateLimitCodes[ge.Code]; ok || ge.Status == http.StatusTooManyRequests {
			if ge.RetryAfter > 0 {
				d = ge.RetryAfter
			} else if d == 0 {
				d = 5 * time.Second
			}
			return channels.RateLimited(d, wrapped)
		}
		if temporaryCodes[ge.Code] {
			return channels.Temporary(wrapped)
		}
		if ge.Status >= 500 && ge.Code == 0 {
			return channels.Ambiguous(wrapped)
		}
		if ge.Status >= 500 {
			return channels.Temporary(wrapped)
		}
		return channels.Permanent(wrapped)
	case errors.As(err, &te):
		if ctx.Err() != nil {
			return channels.Permanent(wrapped)
		}
		if te.written {
			return channels.Ambiguous(wrapped)
		}
		return channels.Temporary(wrapped)
	}
	return channels.Ambiguous(wrapped) // accepted without an id: it may exist
}

// StartTyping marks the chat's last received message read with the typing
// indicator and refreshes it every TypingInterval until stop. A chat without
// a received message shows nothing. Failures are logged, never returned.
func (c *Adapter) StartTyping(ctx context.Context, target channels.Target) (stop func()) {
	id := c.lastReceived("+" + digitsOnly(target.ChatID))
	if id == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(c.opts.TypingInterval)
		defer t.Stop()
		for {
			c.typing(ctx, id)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// typing sends one read receipt with the typing indicator.
func (c *Adapter) typing(ctx context.Context, messageID string) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := c.do(cctx, http.MethodPost, c.base+"/"+pathEscape(c.opts.PhoneNumberID)+"/messages",
		outMessage{MessagingProduct: "whatsapp", Status: "read", MessageID: messageID,
			TypingIndicator: &typingIndicator{Type: "text"}}, nil)
	if err != nil && ctx.Err() == nil {
		c.log.Debug("whatsapp: typing indicator failed", "message_id", messageID, "err", err)
	}
}
