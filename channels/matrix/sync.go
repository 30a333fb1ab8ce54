package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"maunium.net/go/mautrix"

	"github.com/switchboard-bot/switchboard/channels"
)

// This file is the /sync long poll's wire types and batch handling, and
// the gap filling of limited timelines through /rooms/{id}/messages.

// syncFilter is the inline filter of every /sync: no presence, no
// ephemeral events (typing, receipts), at most timelineLimit events per room
// (more come back limited and are paged with /messages).
const timelineLimit = 50

var syncFilter = fmt.Sprintf(`{"presence":{"not_types":["*"]},"room":{"ephemeral":{"not_types":["*"]},"timeline":{"limit":%d}}}`, timelineLimit)

// maxSyncBytes bounds a /sync or /messages answer (mautrix's default is 512 MiB).
const maxSyncBytes = 64 << 20

// syncResponse is the part of a /sync answer the adapter reads. Events stay
// raw and are decoded one by one, so one malformed event cannot wedge the
// whole batch.
type syncResponse struct {
	NextBatch   string `json:"next_batch"`
	AccountData struct {
		Events []json.RawMessage `json:"events"`
	} `json:"account_data"`
	Rooms struct {
		Join   map[string]joinedRoom  `json:"join"`
		Invite map[string]invitedRoom `json:"invite"`
	} `json:"rooms"`
}

type joinedRoom struct {
	State struct {
		Events []json.RawMessage `json:"events"`
	} `json:"state"`
	Timeline struct {
		Events    []json.RawMessage `json:"events"`
		Limited   bool              `json:"limited"`
		PrevBatch string            `json:"prev_batch"`
	} `json:"timeline"`
}

type invitedRoom struct {
	InviteState struct {
		Events []json.RawMessage `json:"events"`
	} `json:"invite_state"`
}

// rawEvent is a client event.
type rawEvent struct {
	Type     string          `json:"type"`
	EventID  string          `json:"event_id"`
	Sender   string          `json:"sender"`
	TS       int64           `json:"origin_server_ts"`
	StateKey *string         `json:"state_key"`
	Content  json.RawMessage `json:"content"`
}

// syncOnce performs one /sync from since ("" = the initial sync, which
// does not wait).
func (a *Adapter) syncOnce(ctx context.Context, since string) (*syncResponse, error) {
	timeout := a.opts.PollTimeout
	q := map[string]string{"filter": syncFilter, "timeout": strconv.FormatInt(timeout.Milliseconds(), 10)}
	if since == "" {
		q["timeout"] = "0"
	} else {
		q["since"] = since
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+a.opts.RequestTimeout)
	defer cancel()
	var resp syncResponse
	_, err := a.cli.MakeFullRequest(ctx, mautrix.FullRequest{
		Method: http.MethodGet, URL: a.cli.BuildURLWithQuery(mautrix.ClientURLPath{"v3", "sync"}, q),
		ResponseJSON: &resp, ResponseSizeLimit: maxSyncBytes,
	})
	if err != nil {
		return nil, err
	}
	if resp.NextBatch == "" {
		return nil, errors.New("the homeserver's /sync answer has no next_batch")
	}
	return &resp, nil
}

// handleBatch takes one /sync answer: account data, invites, then each
// joined room's events in order. It returns the first error (an event the
// sink refused, an invite not answered): the batch is then fetched again.
func (a *Adapter) handleBatch(ctx context.Context, sink channels.Sink, since string, b *syncResponse) error {
	for _, raw := range b.AccountData.Events {
		a.accountData(raw)
	}
	for _, roomID := range sortedKeys(b.Rooms.Invite) {
		if err := a.handleInvite(ctx, sink, roomID, b.Rooms.Invite[roomID]); err != nil {
			return fmt.Errorf("invite to %s: %w", roomID, err)
		}
	}
	skipped := 0
	for _, roomID := range sortedKeys(b.Rooms.Join) {
		room := b.Rooms.Join[roomID]
		for _, raw := range room.State.Events {
			a.learnMember(roomID, raw)
		}
		if since == "" {
			// First start: earlier messages are history, not questions.
			for _, raw := range room.Timeline.Events {
				a.learnMember(roomID, raw)
				skipped++
			}
			continue
		}
		if room.Timeline.Limited && room.Timeline.PrevBatch != "" {
			if err := a.fillGap(ctx, sink, roomID, since, room.Timeline.PrevBatch); err != nil {
				return err
			}
		}
		for _, raw := range room.Timeline.Events {
			if err := a.handleEvent(ctx, sink, roomID, raw); err != nil {
				return err
			}
		}
	}
	if since == "" && skipped > 0 {
		a.log.Info("first start: the rooms' earlier events are not answered", "events", skipped)
	}
	return nil
}

// fillGap hands on the events of roomID between the tokens from and to
// (a limited timeline's gap), paging /messages forwards.
func (a *Adapter) fillGap(ctx context.Context, sink channels.Sink, roomID, from, to string) error {
	for page := 0; from != "" && page < 1000; page++ {
		q := map[string]string{"dir": "f", "from": from, "to": to, "limit": "100"}
		var resp struct {
			Chunk []json.RawMessage `json:"chunk"`
			End   string            `json:"end"`
		}
		cctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
		_, err := a.cli.MakeFullRequest(cctx, mautrix.FullRequest{
			Method: http.MethodGet, URL: a.cli.BuildURLWithQuery(mautrix.ClientURLPath{"v3", "rooms", roomID, "messages"}, q),
			ResponseJSON: &resp, ResponseSizeLimit: maxSyncBytes,
		})
		cancel()
		if err != nil {
			return fmt.Errorf("read the events missed in %s: %w", roomID, err)
		}
		for _, raw := range resp.Chunk {
			if err := a.handleEvent(ctx, sink, roomID, raw); err != nil {
				return err
			}
		}
		if resp.End == "" || resp.End == from || len(resp.Chunk) == 0 {
			return nil
		}
		from = resp.End
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
