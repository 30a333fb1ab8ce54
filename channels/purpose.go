package channels

import "context"

// Purpose says why a delivery that answers no chat message is sent. A
// platform that cannot send free-form text at any time (WhatsApp outside
// its 24-hour customer-service window) may pick a pre-approved message
// form by it; every other adapter ignores it.
type Purpose string

// The purposes the scheduler sets.
const (
	PurposeGreeting Purpose = "greeting" // a heartbeat greeting
	PurposeReminder Purpose = "reminder" // a reminder job's text
)

type purposeKey struct{}

// WithPurpose returns ctx carrying p for the Send calls made with it.
func WithPurpose(ctx context.Context, p Purpose) context.Context {
	return context.WithValue(ctx, purposeKey{}, p)
}

// PurposeOf returns the purpose ctx carries ("" for a chat answer).
func PurposeOf(ctx context.Context) Purpose {
	p, _ := ctx.Value(purposeKey{}).(Purpose)
	return p
}
