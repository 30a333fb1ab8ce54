package channels

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// KV is the small key-value part of the store that pairing uses.
type KV interface {
	KVGet(ctx context.Context, key string) ([]byte, bool, error)
	KVPut(ctx context.Context, key string, val []byte) error
	KVDelete(ctx context.Context, key string) error
}

// Pairing limits.
const (
	PairingCodeLen     = 8
	PairingTTL         = time.Hour
	PairingMaxPerChan  = 3
	pairingAlphabet    = "ABCDEFGHJKMNPQRSTUVWXYZ23456789" // no 0/O, 1/I/L
	kvPairingPending   = "pairing/pending"
	kvPairingApprovedP = "pairing/approved/"
)

// ErrPairingFull means a channel already has PairingMaxPerChan pending codes.
var ErrPairingFull = errors.New("too many pending pairing requests on this channel")

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
}

// Pairing issues and approves one-time codes for unknown direct senders.
// State lives in the store's KV so it survives restarts and the CLI can
// approve a code with the daemon stopped.
type Pairing struct {
	kv  KV
	now func() time.Time
	mu  sync.Mutex
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
func (p *Pairing) Request(ctx context.Context, msg Message) (req PairingRequest, created bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pending, err := p.load(ctx)
	if err != nil {
		return PairingRequest{}, false, err
	}
	user := msg.UserKey()
	n := 0
	for _, r := range pending {
		if r.User == user {
			return r, false, nil
		}
		if r.Channel == msg.Channel {
			n++
		}
	}
	if n >= PairingMaxPerChan {
		return PairingRequest{}, false, ErrPairingFull
	}
	code, err := newCode()
	if err != nil {
		return PairingRequest{}, false, err
	}
	now := p.now()
	req = PairingRequest{Code: code, Channel: msg.Channel, User: user, Name: msg.Sender.Name,
		Target: msg.Target().String(), Created: now, Expires: now.Add(PairingTTL)}
	pending = append(pending, req)
	if err := p.save(ctx, pending); err != nil {
		return PairingRequest{}, false, err
	}
	return req, true, nil
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
