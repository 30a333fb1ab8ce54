// Package mcp is Switchboard's MCP (Model Context Protocol) client, built on
// the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// A Manager runs the servers of config mcp.servers: stdio servers (a child
// process in its own process group, given only PATH, HOME, USER, LANG,
// LC_ALL, TMPDIR and TZ from the daemon's environment plus the server's
// env) and Streamable HTTP servers (url, with headers added to every
// request). Each server's tools become agent tools named <server>__<tool>
// with the server's description and input schema; the agent validates
// arguments against that schema before the server is called. The
// server's readOnlyHint and destructiveHint are exposed through
// agent.Annotated.
//
// Names: characters of a tool's name outside a-z, A-Z, 0-9, _ and - become
// _ (get.data is offered as <server>__get_data); Status maps such names to
// the server's own. Two tools that would get one name are never offered
// under it by chance: a tool whose name needed no change keeps it and the
// other is refused; when both were changed, both are refused. A name over
// 64 characters and a schema over 64 KiB are refused too. Each refusal is
// a WARN naming the tools involved and is listed in Status (Refused) and
// by `switchboard mcp list`; to choose between colliding tools, list the
// one to use in mcp.servers.NAME.tools.
//
// Results: text content goes to the model as text; images and audio as a
// short "[image: image/png, N bytes]" note (tool results reach the model
// as text: the agent has no image-result path); an embedded text resource
// as its text; structured content as JSON (unless a text part already is
// that JSON); a result marked isError as a tool error the model sees.
//
// Supervision: a server whose connection ends (a crashed child, a closed
// HTTP session) is restarted with backoff (1s doubling to 1m, ±20% jitter,
// internal/retry; reset after a successful connection); meanwhile its tools
// stay offered and answer "unavailable" at once, so a turn never hangs on a
// dead server. Restart (the web console's button) ends a server's
// connection and process and connects again at once, skipping a pending
// backoff; Tools lists a server's tools with their descriptions.
// notifications/tools/list_changed refreshes the list. Apply (hot reload)
// starts, stops or restarts only the servers whose config changed; Close
// stops every server, kills each child's process group and reaps it. On
// Linux a child also gets SIGKILL if the daemon dies without shutting down.
package mcp
