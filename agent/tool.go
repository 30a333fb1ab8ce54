package agent

import (
	"context"
	"encoding/json"
)

// Tool is one capability the model may call.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON Schema (draft 2020-12 or 7) of the arguments object.
	Schema() json.RawMessage
	// Call runs the tool with arguments already validated against Schema. The
	// returned text is the observation given back to the model. Errors are
	// given back to the model as the tool result, never crash the turn.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// Repeatable is implemented by tools that are safe to call again after any
// failure (no side effects). Tools with side effects are retried only on
// errors marked temporary (see TemporaryError), never after an ambiguous one.
type Repeatable interface {
	Repeatable() bool
}

// TemporaryError marks a tool error as safe to retry (the call certainly had no effect).
type TemporaryError struct{ Err error }

func (e *TemporaryError) Error() string { return e.Err.Error() }
func (e *TemporaryError) Unwrap() error { return e.Err }

// PermanentError marks a tool error that no retry can change: a policy
// refusal (an address the guard refuses, a domain not allowed), arguments
// that can never work. It is given to the model at once, never retried, even
// for a Repeatable tool.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err (if not nil) in a *PermanentError.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// CallInfo tells a tool which turn it runs in (session, persona, job).
type CallInfo struct {
	SessionKey string
	Persona    string
	// JobName is set when the turn runs for a scheduled job (tools that create
	// jobs refuse then: no recursion).
	JobName string
	// DeliverTo are the targets of the job whose turn this is (nil outside
	// jobs): the chats a job's turn may reach (send_message). A chat turn may
	// reach only its own chat, SessionKey.
	DeliverTo []string
	// TurnID identifies the running turn.
	TurnID string
	// Skills is the persona's skills allowlist (Persona.Skills: nil = every
	// skill, empty non-nil = none).
	Skills []string
	// Files is the turn's overlay over the chat's workspace (workspace.go);
	// nil when the agent has no workspace store.
	Files *TurnFiles
}

type callInfoKey struct{}

// WithCallInfo returns ctx carrying ci.
func WithCallInfo(ctx context.Context, ci CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, ci)
}

// CallInfoFrom returns the CallInfo of the running turn, if any.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	ci, ok := ctx.Value(callInfoKey{}).(CallInfo)
	return ci, ok
}
