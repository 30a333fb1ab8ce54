package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"sync/atomic"

	"net/http/httptrace"

	"github.com/switchboard-bot/switchboard/channels"
)

// Files back to the chat (send_file) through the Cloud API: the bytes are
// uploaded with POST /{phone-number-id}/media (multipart:
// messaging_product, type, file), then a message of type image (JPEG or
// PNG up to 5 MB, shown inline) or document (anything else, up to 100 MB,
// with its file name) names the media id, the caption beside it. Like a
// text, a file is refused outside the 24-hour window (131047). The Cloud
// API has no idempotency key: a resend after a crash during the message
// call may show the file twice (the window DESIGN.md allows); a repeated
// upload only leaves unused media, which WhatsApp deletes after 30 days.

// Cloud API media limits.
const (
	MaxDocument = 100 << 20
	MaxImage    = 5 << 20
)

var _ channels.FileSender = (*Adapter)(nil)

// MaxFileSize implements channels.FileSender.
func (c *Adapter) MaxFileSize() int64 { return MaxDocument }

type outMediaRef struct {
	ID       string `json:"id"`
	Filename string `json:"filename,omitempty"`
	Caption  string `json:"caption,omitempty"`
}

type mediaMessage struct {
	MessagingProduct string       `json:"messaging_product"`
	RecipientType    string       `json:"recipient_type"`
	To               string       `json:"to"`
	Type             string       `json:"type"`
	Document         *outMediaRef `json:"document,omitempty"`
	Image            *outMediaRef `json:"image,omitempty"`
	CallbackData     string       `json:"biz_opaque_callback_data,omitempty"`
}

// SendFile implements channels.FileSender; it returns the message's wamid.
func (c *Adapter) SendFile(ctx context.Context, f channels.OutgoingFile) (string, error) {
	to := digitsOnly(f.Target.ChatID)
	if to == "" {
		return "", channels.Permanent(fmt.Errorf("whatsapp: send file: %q is not a phone number", f.Target.ChatID))
	}
	if len(f.Data) > MaxDocument {
		return "", channels.Permanent(fmt.Errorf("whatsapp: %s is %d bytes; the limit is %d", f.Name, len(f.Data), MaxDocument))
	}
	name := f.Name
	if strings.TrimSpace(name) == "" {
		name = "file"
	}
	mime := strings.TrimSpace(strings.SplitN(f.MIME, ";", 2)[0])
	if mime == "" {
		mime = "application/octet-stream"
	}
	mediaID, err := c.uploadMedia(ctx, name, mime, f.Data)
	if err != nil {
		// Nothing shows in the chat before the message: an upload is
		// never ambiguous.
		cerr := c.classify(ctx, "upload media", err)
		if kind, _ := channels.ClassifyError(cerr); kind == channels.KindAmbiguous {
			cerr = channels.Temporary(err)
		}
		return "", cerr
	}
	msg := mediaMessage{MessagingProduct: "whatsapp", RecipientType: "individual", To: to, CallbackData: f.Nonce}
	ref := &outMediaRef{ID: mediaID, Caption: f.Caption}
	if (mime == "image/jpeg" || mime == "image/png") && len(f.Data) <= MaxImage {
		msg.Type, msg.Image = "image", ref
	} else {
		ref.Filename = name
		msg.Type, msg.Document = "document", ref
	}
	var ans sendAnswer
	if err := c.do(ctx, http.MethodPost, c.base+"/"+pathEscape(c.opts.PhoneNumberID)+"/messages", msg, &ans); err != nil {
		return "", c.classify(ctx, "send "+msg.Type, err)
	}
	if len(ans.Messages) == 0 || ans.Messages[0].ID == "" {
		return "", channels.Ambiguous(errors.New("whatsapp: send file: graph API accepted the message but returned no message id"))
	}
	return ans.Messages[0].ID, nil
}

// uploadMedia uploads data and returns its media id.
func (c *Adapter) uploadMedia(ctx context.Context, name, mime string, data []byte) (string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("messaging_product", "whatsapp")
	_ = mw.WriteField("type", mime)
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
	h.Set("Content-Type", mime)
	part, err := mw.CreatePart(h)
	if err != nil {
		return "", fmt.Errorf("encode upload: %w", err)
	}
	_, _ = part.Write(data)
	if err := mw.Close(); err != nil {
		return "", fmt.Errorf("encode upload: %w", err)
	}
	var written atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			written.Store(true)
		}
	}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/"+pathEscape(c.opts.PhoneNumberID)+"/media", &body)
	if err != nil {
		return "", fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.opts.AccessToken)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return "", &transportError{err: scrubURLError(err), written: written.Load()}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxGraphAnswer))
	if err != nil {
		return "", &transportError{err: fmt.Errorf("read answer: %w", err), written: true}
	}
	if resp.StatusCode/100 != 2 {
		return "", graphError(resp, raw)
	}
	var ans struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil || ans.ID == "" {
		return "", fmt.Errorf("graph API answered the upload without a media id")
	}
	return ans.ID, nil
}
