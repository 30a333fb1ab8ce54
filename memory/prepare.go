package memory

import (
	"fmt"
	"strings"
	"time"
)

// Helpers every implementation applies before it writes, so the contract's
// defaults and checks are the same on every backend.

// ValidOutboxStatus reports whether s is an outbox record state.
func ValidOutboxStatus(s string) bool {
	return s == OutboxPending || s == OutboxDelivered || s == OutboxFailed
}

// PrepareIntent defaults an intent's status to pending, checks it and sets
// its Created and Updated to now.
func PrepareIntent(r OutboxRecord, now time.Time) (OutboxRecord, error) {
	if r.Status == "" {
		r.Status = OutboxPending
	}
	if !ValidOutboxStatus(r.Status) {
		return r, fmt.Errorf("memory: outbox intent: invalid status %q", r.Status)
	}
	r.Created, r.Updated = now, now
	return r, nil
}

// PrepareIntents is PrepareIntent for each of in, into a new slice.
func PrepareIntents(in []OutboxRecord, now time.Time) ([]OutboxRecord, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]OutboxRecord, len(in))
	for i, r := range in {
		p, err := PrepareIntent(r, now)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// CheckReceipts refuses a receipt whose status is not an outbox state.
func CheckReceipts(rs []Receipt) error {
	for _, r := range rs {
		if !ValidOutboxStatus(r.Status) {
			return fmt.Errorf("memory: record delivery: receipt %d: invalid status %q", r.ID, r.Status)
		}
	}
	return nil
}

// StampAudit returns in with every zero Time set to now, in a new slice.
func StampAudit(in []AuditRecord, now time.Time) []AuditRecord {
	if len(in) == 0 {
		return nil
	}
	out := make([]AuditRecord, len(in))
	for i, r := range in {
		if r.Time.IsZero() {
			r.Time = now
		}
		out[i] = r
	}
	return out
}

// PrepareCommit checks a turn's commit for session key (a turn needs the key
// and at least one message) and returns it with its intents prepared and its
// audit records stamped (PrepareIntents, StampAudit), in new slices.
func PrepareCommit(key string, c TurnCommit, now time.Time) (TurnCommit, error) {
	if c.Turn != nil {
		if key == "" {
			return c, fmt.Errorf("memory: commit turn: empty session key")
		}
		if len(c.Turn.Messages) == 0 {
			return c, fmt.Errorf("memory: commit turn of %s: turn has no messages", key)
		}
	}
	intents, err := PrepareIntents(c.Intents, now)
	if err != nil {
		return c, err
	}
	c.Intents, c.Audit = intents, StampAudit(c.Audit, now)
	return c, nil
}

// PrepareDelivery checks a delivery step's receipts and returns it with its
// intents prepared and its audit records stamped, in new slices.
func PrepareDelivery(d DeliveryRecord, now time.Time) (DeliveryRecord, error) {
	if err := CheckReceipts(d.Receipts); err != nil {
		return d, err
	}
	intents, err := PrepareIntents(d.Intents, now)
	if err != nil {
		return d, err
	}
	d.Intents, d.Audit = intents, StampAudit(d.Audit, now)
	return d, nil
}

// NoteMatcher is SearchNotes's rule on every backend: a note matches when its
// text contains every word of query, case-insensitively (substring match per
// word, Go's case folding). An empty query matches every note.
func NoteMatcher(query string) func(Note) bool {
	words := strings.Fields(strings.ToLower(query))
	return func(n Note) bool {
		text := strings.ToLower(n.Text)
		for _, w := range words {
			if !strings.Contains(text, w) {
				return false
			}
		}
		return true
	}
}
