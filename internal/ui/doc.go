// Package ui owns the web console the daemon serves under /ui/ (issue 17):
// login with the admin token, the server-side login sessions, CSRF, the
// security headers, and the pages — overview (channels, model, queue,
// delivery, turn and latency charts, live over Server-Sent Events), chat
// through the web channel, sessions, jobs, usage (tokens and money per day,
// chat, model and persona from the store's usage book; usage.go), personas,
// config, pairing, audit and waiting approvals, and the operator's pages of
// issue 34 — channels, MCP servers (with a restart button), skills and the
// daemon's log (Operations, operations.go). Pages are html/template, every asset (templates,
// app.js, style.css) is embedded; there is no Node build step and no CDN.
//
// Departure: DESIGN.md §1 (layout and dependency line) names this package
// internal/webui; the code is internal/ui. Its place is the same: only
// internal/daemon imports it, and it imports nothing above it.
//
// The package knows nothing of the daemon: internal/daemon implements
// Backend (config, store, channel states, the scheduler's jobs, pairing,
// approvals, reload, the checks config validation runs, the cluster status
// with replicas) and, when the web channel is on, Chat (channels/web's
// adapter itself). The daemon runs the web channel only when the console
// agrees to serve (CheckServe), so no channel runs that nobody can reach.
//
// Design decisions:
//
//   - Login takes the admin token: server.admin_token, or the token the
//     daemon keeps in <data_dir>/admin.token (Backend.Tokens), or a
//     one-time link `switchboard console` asks for with that token
//     (oncelink.go: single use, minutes long, kept hashed in memory).
//     Success gives a random session id in an HttpOnly, SameSite=Strict
//     cookie (Secure when the request came over TLS; proxy headers are not
//     trusted), kept in a bounded server-side table with a sliding expiry
//     (Options.SessionTTL). Logout deletes the entry. Wrong tokens are rate
//     limited per client IP (proxied requests in a bucket of their own) and
//     globally (golang.org/x/time/rate); the token is checked first, so the
//     right one is never refused by a limit (auth.go).
//   - Every POST needs the session's CSRF token (hidden field "csrf", or the
//     X-CSRF-Token header app.js sends); the login form uses a double-submit
//     pre-session cookie. A POST whose Origin names another host is refused.
//     Without a session only /ui/login and /ui/static/ answer.
//   - Headers on every answer: a Content-Security-Policy without inline
//     script or style, nosniff, Referrer-Policy no-referrer, frame-ancestors
//     'none'. Charts are inline SVG with presentation attributes only.
//   - All user, model and tool text goes through html/template escaping.
//     Model answers are Markdown rendered by goldmark with raw HTML off and a
//     URL filter: links keep only http, https and mailto destinations,
//     images become links (no remote loads); anything else is plain text.
//   - Secrets never reach a page: the config view is Config.RedactedYAML; the
//     whole-file editor is offered only when the file writes no secret in
//     plain text (config.PlaintextSecrets), else keys are edited one by one
//     and secret values are never echoed back.
//   - Config edits go through config.SetInFile (a key) or config.ReplaceFile
//     (the file), both validate-then-write with comments kept, after a
//     preview with a diff; the persona references are checked too
//     (Backend.CheckConfig). Then the daemon reloads (Backend.Reload), so the
//     edit applies even with file watching off. Persona edits are parsed with
//     personas.Parse (file:line errors shown inline) before the file is
//     written atomically, then reloaded the same way.
//   - Stats keeps per-minute buckets of turns, errors and latency for a day
//     (fed as a hub Observer) and the traces of the last turns by turn id, so
//     the chat page shows each turn's state timeline with durations; turns
//     of an earlier process fall back to a timeline from message times. The
//     first overview after a start adds the store's turns of the last day
//     that ended before (Stats.Backfill), so the charts survive a restart;
//     tokens per day over two weeks come from the usage book (history.go).
//     The day chart's axis shows dates.
//   - A turn's timeline is drawn as a waterfall (waterfall.go: model calls,
//     each tool, approval waits and the delivery as SVG bars with their
//     durations), the table of states behind it in a <details>. The wait in
//     the chat's queue is not recorded anywhere, so it is not drawn.
//   - The navigation shows badges for the tool calls waiting for approval
//     and the pairing codes waiting for a decision, kept current by the
//     attention stream (attention.go). On a narrow screen the menu collapses
//     behind a button (app.js; without script the links stay shown), wide
//     tables scroll in their own box, and the colors follow the system's
//     prefers-color-scheme (light and dark; charts are recolored by the
//     stylesheet's variables).
//   - Live parts are Server-Sent Events (overview, chat); each stream is
//     owned by its request and ends with it or with Server.Close.
//   - The chat stream (chatstream.go) subscribes, then sends the
//     conversation as it is (history, and the running turn), so nothing
//     finished or started before the browser connected is missed. The
//     running turn's drafts (channels/web marks them Live while the typing
//     indicator is on) go to a live area as "live" state and never into
//     the history; the history is re-rendered only for finished messages,
//     at the turn's end and when its commit shows up in the store.
//   - Markdown while it streams (issue 34): the live area's content is
//     rendered on the server by the page's own template and sanitizer
//     (markdownHTML: goldmark without raw HTML, safeLinks — the only HTML
//     the console makes from text) and sent in the "live" event; app.js
//     puts it in place through a <template> element, whose content runs no
//     script, and never builds HTML from model text. Bounded: drafts past
//     maxLiveMarkdown show as plain text, deltas render at most every
//     liveEvery (chatstream.go).
//   - The approval request in the chat gets Approve / Deny buttons (a card
//     in the live area, chatlog.go). A click posts /approve or /deny through
//     the web channel, exactly as the operator typing it in that chat, so
//     the hub's rules decide (that chat's waiting call, its requester or an
//     admin, the timeout, the audit); the route refuses a card whose call
//     is no longer the one waiting (chatapproval.go).
//   - The chat shows the operator's own messages from channels/web's Posts
//     until the stored turn holds them (a turn waiting for approval is not
//     stored yet), and names them "you" everywhere (the sender id stays
//     "operator", so the user key does not change).
//   - The overview's "Last turns" are this process's (Stats) and, behind
//     them, the newest stored turns of before it, read once (recent.go).
//   - With replicas (storage.backend postgres) the overview has a Cluster
//     block: replicas alive and the leases each holds (Backend.Cluster);
//     with bolt it is absent. A database error is logged, not shown.
package ui
