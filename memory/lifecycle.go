package memory

import "context"

// The three writes of a message (issue 19).
//
// A chat message that gets an answer costs the store three transactions:
//
//  1. Inbox.Accept: dedup + the inbox item, before the platform is
//     acknowledged;
//  2. Lifecycle.CommitTurn: the turn's messages and usage, its inbox items
//     marked answered, the send intent of the answer's first chunk, the
//     turn's audit records — everything the turn decided, at once;
//  3. Lifecycle.RecordDelivery: the chunk's receipt and the inbox items the
//     delivery finished.
//
// An answer of n chunks costs n-1 more RecordDelivery calls, each the
// receipt of chunk i-1 and the intent of chunk i: an intent still precedes
// every platform call and a receipt follows it, so a crash leaves at most one
// chunk whose fate is unknown (DESIGN.md §2). Implementations commit each call
// in one transaction: either all of it is on disk or none of it.

// TurnCommit is what a turn writes when it ends.
type TurnCommit struct {
	// Turn is appended to the session (its Sources are marked answered with
	// its Answer, as AppendTurn does). Nil: no turn to append (an answer
	// produced without the model, a command's reply).
	Turn *Turn
	// Intents are send intents (Status OutboxPending) recorded before the
	// first platform call of the answer. CommitTurn returns their ids in order.
	Intents []OutboxRecord
	// Audit records the turn's tool calls and decisions.
	Audit []AuditRecord
	// Done are inbox items finished by the commit itself (nothing is left to
	// deliver for them).
	Done []uint64
}

// Receipt completes a send intent with the platform's answer.
type Receipt struct {
	ID         uint64 // the intent's id
	Status     string // OutboxDelivered | OutboxFailed
	PlatformID string
	Error      string
}

// DeliveryRecord is what a delivery step writes after a platform call.
type DeliveryRecord struct {
	// Receipts complete intents; an unknown id is ErrNotFound and nothing is written.
	Receipts []Receipt
	// Intents are the next chunks' send intents; their ids are returned in order.
	Intents []OutboxRecord
	// Audit records written with the step.
	Audit []AuditRecord
	// Done are the inbox items the delivery finished.
	Done []uint64
}

// Lifecycle is the turn's commit and the delivery records, each one
// transaction (see above). Inbox.Accept is the first of the three writes.
type Lifecycle interface {
	CommitTurn(ctx context.Context, key string, c TurnCommit) (intentIDs []uint64, err error)
	RecordDelivery(ctx context.Context, d DeliveryRecord) (intentIDs []uint64, err error)
}
