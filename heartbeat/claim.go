package heartbeat

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// SlotClaimer decides which process fires a schedule slot when replicas
// share one database (internal/cluster's Fire, wired by internal/daemon).
// Claim is true for exactly one caller of each (job, slot), ever; false
// means another replica (or an earlier leader) fired it. Options.Claimer
// nil is a single host: every slot is this process's.
//
// Where the claim sits: a recurring job claims (name, occurrence) before it
// records the occurrence as handled; a lost claim only records it, so a
// leader change never starts an occurrence twice. An occurrence claimed by
// a leader that died before its run started is not run again; one whose
// run it left "running" is resumed once by the next leader without a new
// claim, exactly as after a crash mid-run of a single host (Jobs.interrupted;
// the outbox key of each delivery keeps a confirmed chunk from being sent
// twice). A one-shot claims (name, at) and, for each retry,
// (name, retry time); a lost claim counts as a failed attempt, so a claim
// stranded by a dead leader is retried (at most MaxAttempts in all). A
// greeting claims ("heartbeat:<target>#<retry>", slot time) after the model
// answered and before anything is delivered or counted; a lost claim or a
// failed delivery moves the retry number on, so the slot stays due with a
// fresh key, as on a single host.
type SlotClaimer interface {
	Claim(ctx context.Context, job string, slot time.Time) (bool, error)
}

// claim asks o.Claimer, if any, whether this process fires (key, slot).
func (o Options) claim(ctx context.Context, log *slog.Logger, key string, slot time.Time) (bool, error) {
	if o.Claimer == nil {
		return true, nil
	}
	ok, err := o.Claimer.Claim(ctx, key, slot)
	if err != nil {
		return false, fmt.Errorf("claim %s at %s: %w", key, slot.UTC().Format(time.RFC3339), err)
	}
	if !ok {
		log.Info("slot already fired by another replica", slog.String("slot_of", key), slog.Time("slot", slot))
	}
	return ok, nil
}

// greetingKey is the claim key of a target's greeting slot at retry n.
func greetingKey(target string, retry int) string {
	return fmt.Sprintf("heartbeat:%s#%d", target, retry)
}

// claimOneShot claims a one-shot's current attempt; a lost claim is
// recorded as a failed attempt (unless the state moved on meanwhile), so a
// claim stranded by a dead leader is retried with a fresh slot.
func (j *Jobs) claimOneShot(ctx context.Context, s JobSpec, st jobState, log *slog.Logger) (bool, error) {
	slot := s.At
	if st.Attempts > 0 {
		slot = st.RetryAt
	}
	ok, err := j.o.claim(ctx, log, s.Name, slot)
	if err != nil || ok {
		if err != nil {
			err = fmt.Errorf("jobs: %s: %w", s.Name, err)
		}
		return ok, err
	}
	cur, _, err := j.loadState(ctx, s.Name)
	if err != nil || cur.Done || cur.Attempts != st.Attempts {
		return false, err
	}
	cur.Attempts++
	if cur.Attempts >= j.o.MaxAttempts {
		cur.Done = true
	} else {
		cur.RetryAt = j.o.Now().Add(j.o.RetryDelay)
	}
	return false, j.saveState(ctx, s.Name, cur)
}

// claimGreeting claims target's due slot; a lost claim moves the retry
// number on (unless the state moved on meanwhile), so the slot stays due
// with a fresh key.
func (h *Heartbeat) claimGreeting(ctx context.Context, log *slog.Logger, target string, p DayPlan, st dayState) (bool, error) {
	ok, err := h.o.claim(ctx, log, greetingKey(target, st.Retries), p.Slots[st.Used])
	if err != nil || ok {
		return ok, err
	}
	cur, err := h.loadState(ctx, target, p.Day)
	if err != nil || cur.Used != st.Used || cur.Retries != st.Retries {
		return false, err
	}
	cur.Retries++
	return false, h.saveState(ctx, target, cur)
}
