package fakewhatsapp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Message is a user's message as the webhook carries it (one entry of
// value.messages). Build them with Text, Media and the like.
type Message map[string]any

// User is a WhatsApp user of the fake.
type User struct {
	WaID string // digits, no '+'
	Name string
}

// Delivery is one webhook delivery (a signed body) and Meta's retries of it.
type Delivery struct {
	Body []byte
	IDs  []string // the message ids it carries

	mu       sync.Mutex
	attempts int
	statuses []int
	done     chan struct{}
}

// Attempts returns the HTTP statuses of the delivery's attempts so far
// (0 for a transport failure).
func (d *Delivery) Attempts() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int(nil), d.statuses...)
}

// Delivered reports whether an attempt was answered 200.
func (d *Delivery) Delivered() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Wait waits until the delivery was answered 200.
func (d *Delivery) Wait(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(timeout):
		t.Fatalf("fakewhatsapp: the webhook delivery of %v was not answered 200 within %s (attempts: %v)", d.IDs, timeout, d.Attempts())
	}
}

// nextID returns a fresh wamid for a user's message.
func (s *Server) nextID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("wamid.HBgL%012dFQIAEhgU%08d", s.seq*7919, s.seq)
}

func (s *Server) base(u User, typ string) Message {
	return Message{"from": u.WaID, "id": s.nextID(), "timestamp": strconv.FormatInt(s.opts.Now().Unix(), 10), "type": typ}
}

// Text is a text message from u.
func (s *Server) Text(u User, text string) Message {
	m := s.base(u, "text")
	m["text"] = map[string]any{"body": text}
	return m
}

// Media is a media message (image, audio, video, document, sticker) from u
// whose file is stored in the fake; caption and filename may be empty.
func (s *Server) Media(u User, typ, mime string, data []byte, caption, filename string, voice bool) Message {
	id := s.AddMedia(mime, data)
	sum := sha256.Sum256(data)
	obj := map[string]any{"id": id, "mime_type": mime, "sha256": hex.EncodeToString(sum[:])}
	if caption != "" {
		obj["caption"] = caption
	}
	if filename != "" {
		obj["filename"] = filename
	}
	if voice {
		obj["voice"] = true
	}
	m := s.base(u, typ)
	m[typ] = obj
	return m
}

// Payload wraps messages from u into a webhook body of the fake's number.
func (s *Server) Payload(u User, msgs ...Message) []byte {
	value := map[string]any{
		"messaging_product": "whatsapp",
		"metadata":          map[string]any{"display_phone_number": s.opts.DisplayNumber, "phone_number_id": s.opts.PhoneNumberID},
		"contacts":          []map[string]any{{"profile": map[string]any{"name": u.Name}, "wa_id": u.WaID}},
		"messages":          msgs,
	}
	return s.wrap(value)
}

// StatusPayload is a statuses callback about the bot's message id sent to
// waID (status: sent, delivered, read, failed; code: an error for failed).
func (s *Server) StatusPayload(id, waID, status string, code int) []byte {
	st := map[string]any{"id": id, "status": status, "timestamp": strconv.FormatInt(s.opts.Now().Unix(), 10), "recipient_id": waID}
	if code != 0 {
		st["errors"] = []map[string]any{{"code": code, "title": "Re-engagement message"}}
	}
	value := map[string]any{
		"messaging_product": "whatsapp",
		"metadata":          map[string]any{"display_phone_number": s.opts.DisplayNumber, "phone_number_id": s.opts.PhoneNumberID},
		"statuses":          []map[string]any{st},
	}
	return s.wrap(value)
}

func (s *Server) wrap(value map[string]any) []byte {
	body, err := json.Marshal(map[string]any{
		"object": "whatsapp_business_account",
		"entry":  []map[string]any{{"id": "WABA0001", "changes": []map[string]any{{"field": "messages", "value": value}}}},
	})
	if err != nil {
		panic(err)
	}
	return body
}

// Send records that u wrote msgs (the 24-hour window opens) and delivers
// them in one signed webhook body, retrying until answered 200. It returns
// at once; Wait on the delivery.
func (s *Server) Send(u User, msgs ...Message) *Delivery {
	s.mu.Lock()
	var ids []string
	for _, m := range msgs {
		id, _ := m["id"].(string)
		ids = append(ids, id)
		s.inbound[id] = u.WaID
	}
	s.lastUser[u.WaID] = s.opts.Now()
	s.mu.Unlock()
	return s.Post(s.Payload(u, msgs...), ids...)
}

// UserSays delivers a text message from u and waits until the webhook
// answered 200.
func (s *Server) UserSays(t testing.TB, u User, text string) *Delivery {
	t.Helper()
	d := s.Send(u, s.Text(u, text))
	d.Wait(t, 30*time.Second)
	return d
}

// Post delivers a signed body, retrying until answered 200.
func (s *Server) Post(body []byte, ids ...string) *Delivery {
	d := &Delivery{Body: body, IDs: ids, done: make(chan struct{})}
	s.wg.Add(1)
	go s.deliverLoop(d)
	return d
}

// Redeliver delivers d's body again (Meta's retry after a lost answer).
func (s *Server) Redeliver(d *Delivery) *Delivery { return s.Post(d.Body, d.IDs...) }

func (s *Server) deliverLoop(d *Delivery) {
	defer s.wg.Done()
	wait := s.opts.RetryMin
	for {
		code := s.postOnce(d.Body, s.Sign(d.Body))
		d.mu.Lock()
		d.attempts++
		d.statuses = append(d.statuses, code)
		d.mu.Unlock()
		s.mu.Lock()
		s.notify()
		s.mu.Unlock()
		if code == http.StatusOK {
			close(d.done)
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, s.opts.RetryMax)
	}
}

// postOnce posts body with signature to the webhook; 0 = no answer.
func (s *Server) postOnce(body []byte, signature string) int {
	s.mu.Lock()
	hook := s.webhook
	s.mu.Unlock()
	if hook == "" {
		return 0
	}
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, hook, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set("X-Hub-Signature-256", signature)
	}
	resp, err := s.hook.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// PostRaw posts body once with the given signature header ("" = none) and
// returns the HTTP status (0: no answer): forged and malformed requests.
func (s *Server) PostRaw(body []byte, signature string) int { return s.postOnce(body, signature) }

// Verify performs Meta's subscription check with token and returns the
// status and body of the answer.
func (s *Server) Verify(mode, token, challenge string) (int, string) {
	s.mu.Lock()
	hook := s.webhook
	s.mu.Unlock()
	q := url.Values{"hub.mode": {mode}, "hub.verify_token": {token}, "hub.challenge": {challenge}}
	resp, err := s.hook.Get(hook + "?" + q.Encode())
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}
