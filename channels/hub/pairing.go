package hub

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

// KV is the small key-value part of the store that pairing uses.
type KV interface {
	KVGet(ctx context.Context, key string) ([]byte, bool, error)
	KVPut(ctx context.Context, key string, val []byte) error
	KVDelete(ctx context.Context, key string) error
}

// Pairing limits. Each stranger holds at most one pending code (asking again
// returns the same code). All channels together hold at most
// PairingMaxPending codes; when that is reached, the oldest code that has
// been pending for at least PairingMinAge is dropped to make room, so a burst
// of strangers cannot block pairing for the whole TTL, yet a code lives long
// enough for the operator to approve it. Only when every pending code is
// younger than PairingMinAge is a new stranger refused (ErrPairingFull), and
// the handler tells them to try again later.
const (
	PairingCodeLen     = 8
	PairingTTL         = time.Hour
	PairingMaxPending  = 100
	PairingMinAge      = 10 * time.Minute
	pairingAlphabet    = "ABCDEFGHJKMNPQRSTUVWXYZ23456789" // no 0/O, 1/I/L
	kvPairingPending   = "pairing/pending"
	kvPairingApprovedP = "pairing/approved/"
)

// ErrPairingFull means PairingMaxPending codes are pending and none is old
// enough (PairingMinAge) to be dropped for a new one.
var ErrPairingFull = errors.New("too many pending pairing requests; try again later")

// pairingRefusedText is the reply to a stranger refused with ErrPairingFull.
const pairingRefusedText = "Hi! I can't take new pairing requests right now. Please try again later."

// ErrUnknownCode means the code is not pending (never issued, used or expired).
var ErrUnknownCode = errors.New("unknown or expired pairing code")

// PairingRequest is one pending pairing code.
type PairingRequest struct {
	Code    string    `json:"code"`
	Channel string    `json:"channel"`
	User    string    `json:"user"` // "telegram:user:42"
	Name    string    `json:"name,omitempty"`
	Target  string    `json:"target"` // the direct chat to tell on approval
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// Source is the inbox item whose reply carries the code (0: unknown); a
	// replay of that item sends the code if it was not delivered yet.
	Source uint64 `json:"source,omitempty"`
}

// Pairing issues and approves one-time codes for unknown direct senders.
// State lives in the store's KV so it survives restarts and the CLI can
// approve a code with the daemon stopped.
type Pairing struct {
	kv  KV
	now func() time.Time
	mu  sync.Mutex

	refusedMu sync.Mutex
	refused   map[string]time.Time // user → when last told "try again later"
	refusals  []time.Time          // when each of the last refusal replies went out
}

// NewPairing returns a Pairing over kv. now may be nil (time.Now).
func NewPairing(kv KV, now func() time.Time) *Pairing {
	if now == nil {
		now = time.Now
	}
	return &Pairing{kv: kv, now: now}
}

// Request returns the pending code for msg's sender, creating one if needed.
// created is false when an existing code was returned (so it is not sent again
// on every message).
func (p *Pairing) Request(ctx context.Context, msg channels.Message) (req PairingRequest, created bool, err error) {
	return p.RequestFrom(ctx, msg, 0)
}

// RequestFrom is Request for the inbox item source, recorded with a new code.
func (p *Pairing) RequestFrom(ctx context.Context, msg channels.Message, source uint64) (req PairingRequest, created bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pending, err := p.load(ctx)
	if err != nil {
		return PairingRequest{}, false, err
	}
	user := msg.UserKey()
	for _, r := range pending {
		if r.User == user {
			return r, false, nil
		}
	}
	now := p.now()
	if pending, err = makeRoom(pending, now); err != nil {
		return PairingRequest{}, false, err
	}
	code, err := newCode()
	if err != nil {
		return PairingRequest{}, false, err
	}
	req = PairingRequest{Code: code, Channel: msg.Channel, User: user, Name: msg.Sender.Name,
		Target: msg.Target().String(), Created: now, Expires: now.Add(PairingTTL), Source: source}
	pending = append(pending, req)
	if err := p.save(ctx, pending); err != nil {
		return PairingRequest{}, false, err
	}
	return req, true, nil
}

// makeRoom returns pending with fewer than PairingMaxPending codes, dropping
// the oldest ones (pending at least PairingMinAge) first, or ErrPairingFull.
func makeRoom(pending []PairingRequest, now time.Time) ([]PairingRequest, error) {
	for len(pending) >= PairingMaxPending {
		oldest := -1
		for i, r := range pending {
			if oldest < 0 || r.Created.Before(pending[oldest].Created) {
				oldest = i
			}
		}
		if now.Sub(pending[oldest].Created) < PairingMinAge {
			return pending, ErrPairingFull
		}
		pending = append(pending[:oldest], pending[oldest+1:]...)
	}
	return pending, nil
}

// Refusal replies are rate limited so that they cannot be used to make the
// bot send messages: one per stranger per PairingMinAge, and at most
// refusalRepliesPerMinute in all.
const refusalRepliesPerMinute = 10

// ShouldTellRefused reports whether a stranger refused with ErrPairingFull
// is to be told to try again later now, and if so records that they were.
// The state is in memory only, and bounded: an entry is kept for
// PairingMinAge, and at most refusalRepliesPerMinute are added per minute.
func (p *Pairing) ShouldTellRefused(user string) bool {
	now := p.now()
	p.refusedMu.Lock()
	defer p.refusedMu.Unlock()
	for u, at := range p.refused {
		if now.Sub(at) >= PairingMinAge {
			delete(p.refused, u)
		}
	}
	recent := p.refusals[:0]
	for _, at := range p.refusals {
		if now.Sub(at) < time.Minute {
			recent = append(recent, at)
		}
	}
	p.refusals = recent
	if _, told := p.refused[user]; told || len(p.refusals) >= refusalRepliesPerMinute {
		return false
	}
	if p.refused == nil {
		p.refused = map[string]time.Time{}
	}
	p.refused[user] = now
	p.refusals = append(p.refusals, now)
	return true
}

// Approve marks the code's user as allowed and removes the code.
func (p *Pairing) Approve(ctx context.Context, code string) (PairingRequest, error) {
	code = strings.ToUpper(strings.TrimSpace(code))
	p.mu.Lock()
	defer p.mu.Unlock()
	pending, err := p.load(ctx)
	if err != nil {
		return PairingRequest{}, err
	}
	for i, r := range pending {
		if r.Code != code {
			continue
		}
		if err := p.kv.KVPut(ctx, kvPairingApprovedP+r.User, []byte(p.now().UTC().Format(time.RFC3339))); err != nil {
			return PairingRequest{}, fmt.Errorf("approve pairing: %w", err)
		}
		pending = append(pending[:i], pending[i+1:]...)
		if err := p.save(ctx, pending); err != nil {
			return PairingRequest{}, err
		}
		return r, nil
	}
	return PairingRequest{}, ErrUnknownCode
}

// Pending lists unexpired pending requests.
func (p *Pairing) Pending(ctx context.Context) ([]PairingRequest, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.load(ctx)
}

// IsApproved reports whether user ("telegram:user:42") was approved.
func (p *Pairing) IsApproved(ctx context.Context, user string) (bool, error) {
	_, ok, err := p.kv.KVGet(ctx, kvPairingApprovedP+user)
	if err != nil {
		return false, fmt.Errorf("pairing lookup: %w", err)
	}
	return ok, nil
}

// load returns pending requests, dropping expired ones.
func (p *Pairing) load(ctx context.Context) ([]PairingRequest, error) {
	raw, ok, err := p.kv.KVGet(ctx, kvPairingPending)
	if err != nil {
		return nil, fmt.Errorf("load pairing requests: %w", err)
	}
	if !ok {
		return nil, nil
	}
	var all []PairingRequest
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, fmt.Errorf("decode pairing requests: %w", err)
	}
	now := p.now()
	live := all[:0]
	for _, r := range all {
		if now.Before(r.Expires) {
			live = append(live, r)
		}
	}
	return live, nil
}

func (p *Pairing) save(ctx context.Context, reqs []PairingRequest) error {
	raw, err := json.Marshal(reqs)
	if err != nil {
		return fmt.Errorf("encode pairing requests: %w", err)
	}
	if err := p.kv.KVPut(ctx, kvPairingPending, raw); err != nil {
		return fmt.Errorf("save pairing requests: %w", err)
	}
	return nil
}

func newCode() (string, error) {
	// Rejection sampling keeps every character equally likely.
	limit := byte(256 - 256%len(pairingAlphabet))
	out := make([]byte, 0, PairingCodeLen)
	buf := make([]byte, 16)
	for len(out) < PairingCodeLen {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("pairing code: %w", err)
		}
		for _, c := range buf {
			if c < limit && len(out) < PairingCodeLen {
				out = append(out, pairingAlphabet[int(c)%len(pairingAlphabet)])
			}
		}
	}
	return string(out), nil
}

func (h *Handler) pair(s *session, it item) {
	// The sender may have been approved while this message waited in the
	// queue: then it is an ordinary message, and no new code is issued.
	if ok, err := h.pairing.IsApproved(h.baseCtx, it.msg.UserKey()); err == nil && ok {
		it.decision = channels.Allow
		h.runTurn(s, []item{it})
		return
	}
	var (
		req     PairingRequest
		created bool
	)
	err := h.storageRetry(h.baseCtx, opPairing, func(ctx context.Context) error {
		var err error
		req, created, err = h.pairing.RequestFrom(ctx, it.msg, it.id)
		return err
	})
	switch {
	case errors.Is(err, ErrPairingFull):
		h.log.Warn("pairing request refused: too many pending codes", "channel", it.msg.Channel, "user", it.msg.UserKey())
		if h.pairing.ShouldTellRefused(it.msg.UserKey()) {
			h.reply(it, pairingRefusedText)
			return
		}
		h.done([]item{it}) // told recently, or too many refusals sent: stay quiet
		return
	case memory.IsStorageError(err):
		return // shutting down: the item stays for the next start
	case err != nil:
		h.log.Error("pairing request", "err", err)
		h.done([]item{it})
		return
	case !created && req.Source != it.id:
		h.done([]item{it}) // another message already got the code; stay quiet
		return
	}
	// created, or this very item asked for the code before a restart and its
	// reply may not have gone out: the outbox (keyed by the item) sends it
	// once, and skips it if it was delivered.
	if created {
		h.audit(it.msg.UserKey(), "pairing.request", it.msg.Target().String(), "code issued", "")
		h.log.Info("pairing code issued", "user", it.msg.UserKey(), "name", it.msg.Sender.Name, "code", req.Code)
	}
	h.reply(it, fmt.Sprintf("Hi! I don't know you yet. Ask the operator of %s to approve this pairing code (valid for 1 hour):\n\n`%s`\n\n(switchboard pairing approve %s)", h.botName, req.Code, req.Code))
}
