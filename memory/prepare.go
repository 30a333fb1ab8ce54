package memory

import (
	"fmt"
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
