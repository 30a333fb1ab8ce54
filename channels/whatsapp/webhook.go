package whatsapp

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// maxWebhookBody bounds one webhook delivery; Meta's are a few KiB (media
// come as ids).
const maxWebhookBody = 1 << 20

// maxChallenge bounds the hub.challenge echoed back (Meta sends a number).
const maxChallenge = 256

// WebhookPattern is the path the daemon mounts WebhookHandler on (GET and
// POST; the descriptor lists both routes).
func (c *Adapter) WebhookPattern() string { return WebhookPath }

// WebhookHandler serves verification (GET) and deliveries (POST).
func (c *Adapter) WebhookHandler() http.Handler { return http.HandlerFunc(c.serveWebhook) }

func (c *Adapter) serveWebhook(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		c.serveVerify(w, r)
	case http.MethodPost:
		c.serveEvents(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// serveVerify answers Meta's subscription check: hub.mode=subscribe and the
// configured verify token echo hub.challenge; anything else is 403.
func (c *Adapter) serveVerify(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	token, challenge := q.Get("hub.verify_token"), q.Get("hub.challenge")
	ok := c.opts.VerifyToken != "" && q.Get("hub.mode") == "subscribe" &&
		subtle.ConstantTimeCompare([]byte(token), []byte(c.opts.VerifyToken)) == 1 &&
		challenge != "" && len(challenge) <= maxChallenge
	if !ok {
		c.log.Warn("whatsapp: webhook verification refused (wrong mode, verify token or challenge)", "remote", r.RemoteAddr)
		http.Error(w, "verification failed", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = io.WriteString(w, challenge)
}

// serveEvents authenticates a delivery, hands its messages to the sink and
// answers 200 only when every one was persisted.
func (c *Adapter) serveEvents(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			c.log.Warn("whatsapp: refused an oversized webhook delivery", "limit", maxWebhookBody, "remote", r.RemoteAddr)
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	if err := c.verifySignature(r.Header.Get("X-Hub-Signature-256"), body); err != nil {
		c.log.Warn("whatsapp: refused a webhook delivery", "reason", err, "remote", r.RemoteAddr)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	c.sinkMu.Lock()
	sink := c.sink
	c.sinkMu.Unlock()
	if sink == nil {
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		// Signed by Meta yet undecodable: a retry would not decode either.
		c.log.Warn("whatsapp: undecodable webhook delivery dropped", "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	if err := c.dispatch(r.Context(), sink, &p); err != nil {
		c.log.Warn("whatsapp: delivery not persisted; answering 500 so Meta delivers it again", "err", err)
		http.Error(w, "not persisted", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

var (
	errNoSignature = errors.New("missing or malformed X-Hub-Signature-256")
	errBadSig      = errors.New("signature mismatch")
)

// verifySignature checks "sha256=" + hex HMAC-SHA256(app secret, body).
func (c *Adapter) verifySignature(header string, body []byte) error {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return errNoSignature
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return errNoSignature
	}
	mac := hmac.New(sha256.New, []byte(c.opts.AppSecret))
	_, _ = mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errBadSig
	}
	return nil
}
