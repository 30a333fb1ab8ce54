package memory

import "context"

// TurnView is what a turn reads from the store before it calls the model,
// read at one point in time (issue 19: one read transaction a turn instead of
// one for the history, one for the session's counters and two for its notes).
type TurnView struct {
	// History is what LoadHistory(key, limit) returns.
	History []Message
	// Meta is what Session(key) returns; Found is false for a new session.
	Meta  SessionMeta
	Found bool
	// Notes are the notes of the session's own scope (ListNotes(key)).
	Notes []Note
}

// TurnReader is implemented by stores that read a turn's view at once: bolt
// in one read transaction, postgres in one round trip (a pipelined batch). It
// is optional: the agent reads the same with LoadHistory, Session and
// ListNotes from a store without it. memory/storetest checks that both ways
// agree.
type TurnReader interface {
	ReadTurn(ctx context.Context, key string, historyLimit int) (TurnView, error)
}
