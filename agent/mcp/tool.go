package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-bot/switchboard/agent"
)

// maxResultChars bounds the text one call returns before the agent's own
// observation limit applies (a server may answer with megabytes).
const maxResultChars = 1 << 20

// A server's tool definitions are bounded: they go into every model request.
const (
	maxSchemaBytes = 64 << 10
	maxDescChars   = 4000
)

// Sep separates the server name from the server's tool name.
const Sep = "__"

// Tool is one tool of an MCP server, offered to the model as
// <server>__<tool>. It answers "unavailable" at once while its server is
// down or restarting.
type Tool struct {
	name   string // <server>__<tool>, as the model sees it
	remote string // the server's own name for the tool
	desc   string
	schema json.RawMessage
	annot  agent.ToolAnnotations
	srv    *server
}

var (
	_ agent.Tool      = (*Tool)(nil)
	_ agent.Annotated = (*Tool)(nil)
)

// Name returns <server>__<tool>.
func (t *Tool) Name() string { return t.name }

// Description is the server's description of the tool.
func (t *Tool) Description() string { return t.desc }

// Schema is the server's input schema.
func (t *Tool) Schema() json.RawMessage { return t.schema }

// Annotations are the server's readOnlyHint and destructiveHint (MCP's
// default for destructiveHint, when absent, is true).
func (t *Tool) Annotations() agent.ToolAnnotations { return t.annot }

// Remote returns the server's own name for the tool.
func (t *Tool) Remote() string { return t.remote }

// Call runs the tool on the server. The arguments were validated against
// Schema by the agent. A result the server marks isError, an unavailable
// server and a dropped connection are errors the model sees (never retried:
// the call may have had an effect).
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	sess, why := t.srv.currentSession()
	if sess == nil {
		return "", agent.Permanent(fmt.Errorf("MCP server %q is unavailable (%s); try again later", t.srv.name, why))
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	ctx, cancel := context.WithTimeout(ctx, t.srv.cfg.timeout())
	defer cancel()
	res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		if errors.Is(err, sdk.ErrConnectionClosed) || ctx.Err() == nil && sessionGone(sess) {
			t.srv.connectionLost(sess, err)
			return "", agent.Permanent(fmt.Errorf("MCP server %q is unavailable (the connection closed during the call; it is being restarted)", t.srv.name))
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", agent.Permanent(fmt.Errorf("MCP server %q did not answer %s within %s", t.srv.name, t.remote, t.srv.cfg.timeout()))
		}
		return "", agent.Permanent(fmt.Errorf("MCP server %q: %s: %w", t.srv.name, t.remote, err))
	}
	text := renderResult(res)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error"
		}
		return "", agent.Permanent(errors.New(text))
	}
	return text, nil
}

// renderResult turns a result into the observation: text as is, images
// and audio as a short note (tool results reach the model as text: the
// agent has no image-result path), embedded text resources as their text,
// structured content as JSON. Bounded to maxResultChars.
func renderResult(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, renderContent(c))
	}
	if res.StructuredContent != nil {
		if js, err := json.Marshal(res.StructuredContent); err == nil && !sameJSON(js, parts) {
			parts = append(parts, string(js))
		}
	}
	out := strings.Join(parts, "\n")
	if len(out) > maxResultChars {
		out = agentTruncate(out, maxResultChars)
	}
	return out
}

func renderContent(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))
	case *sdk.ResourceLink:
		return fmt.Sprintf("[resource link: %s %s]", c.URI, c.Name)
	case *sdk.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[resource]"
		}
		if r.Text != "" {
			return r.Text
		}
		return fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
	default:
		return fmt.Sprintf("[%T content]", c)
	}
}

// sameJSON reports whether one of the text parts already is js (typed
// go-sdk tools send their structured output as text too).
func sameJSON(js []byte, parts []string) bool {
	for _, p := range parts {
		var a, b bytes.Buffer
		if json.Compact(&a, []byte(p)) == nil && json.Compact(&b, js) == nil && a.String() == b.String() {
			return true
		}
	}
	return false
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

func agentTruncate(s string, n int) string {
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[truncated: the result was %d bytes]", len(s))
}

// toolName builds <server>__<tool>, replacing characters outside
// [a-zA-Z0-9_-] with _; ok is false when the result exceeds 64 characters.
func toolName(server, remote string) (string, bool) {
	var sb strings.Builder
	sb.WriteString(server + Sep)
	for _, r := range remote {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	name := sb.String()
	return name, remote != "" && len(name) <= 64
}

// newTool builds the agent tool for a server's tool definition; an error
// is the reason it cannot be offered (for the log and `mcp list`).
func newTool(srv *server, def *sdk.Tool) (*Tool, error) {
	name, ok := toolName(srv.name, def.Name)
	if !ok {
		if def.Name == "" {
			return nil, errors.New("the server gave it no name")
		}
		return nil, fmt.Errorf("the name %s is longer than 64 characters", name)
	}
	schema := json.RawMessage(`{"type":"object"}`)
	if def.InputSchema != nil {
		js, err := json.Marshal(def.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("its input schema: %w", err)
		}
		if len(js) > maxSchemaBytes {
			return nil, fmt.Errorf("its input schema of %d bytes exceeds %d", len(js), maxSchemaBytes)
		}
		schema = js
	}
	if len(def.Description) > maxDescChars {
		def.Description = agentTruncate(def.Description, maxDescChars)
	}
	t := &Tool{name: name, remote: def.Name, desc: def.Description, schema: schema, srv: srv}
	t.annot.Destructive = true // MCP default
	if a := def.Annotations; a != nil {
		t.annot.ReadOnly = a.ReadOnlyHint
		if a.DestructiveHint != nil {
			t.annot.Destructive = *a.DestructiveHint
		}
	}
	if t.annot.ReadOnly {
		t.annot.Destructive = false
	}
	if t.desc == "" && def.Title != "" {
		t.desc = def.Title
	}
	return t, nil
}
