package matrix

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
)

// This file is delivery: Format, Send, Edit, typing and the
// classification of the homeserver's errors.

// ChunkLimit is the longest chunk Format returns (characters of its HTML
// and of its plain text). Matrix events may be 64 KiB; this leaves room for
// both bodies, escaping and <br>s.
const ChunkLimit = 4000

// htmlFormat is the formatted_body format Matrix clients render.
const htmlFormat = "org.matrix.custom.html"

var eventMessage = event.EventMessage

// Format converts Markdown to Matrix HTML chunks (see the package doc),
// each Text and Plain at most ChunkLimit characters.
func (a *Adapter) Format(md string) []channels.Chunk { return formatChunks(md, ChunkLimit) }

// formatChunks splits md into pieces of at most budget runes and converts
// each; a piece whose HTML grew past ChunkLimit (markup, escaping and <br>s)
// is split again with a proportionally smaller budget.
func formatChunks(md string, budget int) []channels.Chunk {
	var out []channels.Chunk
	for _, piece := range markup.Split(md, budget) {
		chunks := markup.TelegramChunks(piece, ChunkLimit)
		longest := 0
		for i := range chunks {
			chunks[i].Text = lineBreaks(chunks[i].Text)
			longest = max(longest, utf8.RuneCountInString(chunks[i].Text), utf8.RuneCountInString(chunks[i].Plain))
		}
		if longest <= ChunkLimit || budget <= markup.MinLimit {
			out = append(out, chunks...)
			continue
		}
		smaller := max(markup.MinLimit, budget*ChunkLimit/longest*9/10)
		if smaller >= budget {
			smaller = budget / 2
		}
		out = append(out, formatChunks(piece, smaller)...)
	}
	return out
}

// lineBreaks turns the newlines of markup's HTML into <br> outside <pre>
// (HTML collapses them; markup puts no tags inside pre and escapes every
// '<' of text, so scanning for the tags is exact).
func lineBreaks(s string) string {
	var b strings.Builder
	for s != "" {
		i := strings.Index(s, "<pre")
		if i < 0 {
			b.WriteString(strings.ReplaceAll(s, "\n", "<br>"))
			break
		}
		b.WriteString(strings.ReplaceAll(s[:i], "\n", "<br>"))
		j := strings.Index(s[i:], "</pre>")
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		j += i + len("</pre>")
		b.WriteString(s[i:j])
		s = s[j:]
		s = strings.TrimPrefix(s, "\n") // a block ends the line already
	}
	return b.String()
}

// htmlToPlain is the text of formatted_body for body: tags dropped, <br>
// and block ends as newlines, entities decoded.
func htmlToPlain(s string) string {
	var b strings.Builder
	for s != "" {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '>')
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		tag := strings.ToLower(s[i+1 : i+j])
		if tag == "br" || tag == "br/" || tag == "/pre" || tag == "/blockquote" {
			b.WriteByte('\n')
		}
		s = s[i+j+1:]
	}
	return html.UnescapeString(b.String())
}

// content is an m.room.message the bot sends: m.notice (bots answer with
// notices), HTML and plain body, no mentions (nobody pinged by accident).
func content(htmlText, plain string) map[string]any {
	if plain == "" {
		plain = htmlToPlain(htmlText)
	}
	return map[string]any{"msgtype": "m.notice", "body": plain, "format": htmlFormat, "formatted_body": htmlText,
		"m.mentions": map[string]any{}}
}

// Send posts one chunk; its transaction id comes from out.Nonce, so the
// same chunk sent again is the same event.
func (a *Adapter) Send(ctx context.Context, out channels.Outgoing) (string, error) {
	c := content(out.Text, out.Plain)
	switch {
	case out.Target.ThreadID != "":
		reply := out.ReplyTo
		if reply == "" {
			reply = out.Target.ThreadID
		}
		c["m.relates_to"] = map[string]any{"rel_type": "m.thread", "event_id": out.Target.ThreadID,
			"is_falling_back": out.ReplyTo == "", "m.in_reply_to": map[string]any{"event_id": reply}}
	case out.ReplyTo != "" && !a.isDirect(ctx, out.Target.ChatID):
		// Groups: the answer quotes the question; a direct chat needs no quote.
		c["m.relates_to"] = map[string]any{"m.in_reply_to": map[string]any{"event_id": out.ReplyTo}}
	}
	idempotent := out.Nonce != ""
	txn := randomTxn()
	if idempotent {
		salt, err := a.txnSalt(ctx)
		if err != nil {
			return "", channels.Temporary(fmt.Errorf("matrix: send: %w", err))
		}
		txn = txnID(salt, out.Nonce)
	}
	cctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
	defer cancel()
	resp, err := a.cli.SendMessageEvent(cctx, id.RoomID(out.Target.ChatID), eventMessage, c, mautrix.ReqSendEvent{TransactionID: txn})
	if err != nil {
		return "", classify(ctx, err, idempotent)
	}
	a.noteSent(string(resp.EventID))
	return string(resp.EventID), nil
}

// noteSent remembers the bot's recent event ids (a reply to one mentions
// the bot).
func (a *Adapter) noteSent(eventID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sent[eventID] {
		return
	}
	a.sent[eventID] = true
	a.sentFIFO = append(a.sentFIFO, eventID)
	if len(a.sentFIFO) > 4096 {
		delete(a.sent, a.sentFIFO[0])
		a.sentFIFO = a.sentFIFO[1:]
	}
}

// Edit replaces the text of the bot's message messageID (m.replace).
func (a *Adapter) Edit(ctx context.Context, target channels.Target, messageID, text string) error {
	nc := content(text, "")
	c := content("* "+text, "* "+nc["body"].(string))
	c["m.new_content"] = nc
	c["m.relates_to"] = map[string]any{"rel_type": "m.replace", "event_id": messageID}
	cctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
	defer cancel()
	_, err := a.cli.SendMessageEvent(cctx, id.RoomID(target.ChatID), eventMessage, c, mautrix.ReqSendEvent{TransactionID: randomTxn()})
	if err != nil {
		// An edit lost in transport is harmless to repeat: the last one wins.
		return classify(ctx, err, true)
	}
	return nil
}

// EditInterval implements channels.Editor.
func (a *Adapter) EditInterval() time.Duration { return a.opts.EditInterval }

// StartTyping shows the bot typing in target's room, once TypingDelay has
// passed, until stop: a turn over sooner sends nothing (not even "typing
// off").
func (a *Adapter) StartTyping(ctx context.Context, target channels.Target) (stop func()) {
	room := id.RoomID(target.ChatID)
	typing := func(ctx context.Context, on bool) {
		cctx, c := context.WithTimeout(ctx, a.opts.RequestTimeout)
		defer c()
		if _, err := a.cli.UserTyping(cctx, room, on, a.opts.TypingInterval+10*time.Second); err != nil && ctx.Err() == nil {
			a.log.Debug("typing not shown", "room", room, "on", on, "err", err)
		}
	}
	return channels.TypingLoop{Delay: a.opts.TypingDelay, Interval: a.opts.TypingInterval, After: a.opts.After,
		Show: func(ctx context.Context) { typing(ctx, true) },
		Off:  func(ctx context.Context) { typing(ctx, false) }}.Start(ctx)
}

// txnID derives a transaction id from a chunk's nonce and the store's salt.
// Nonces are turn ids ("in-<inbox id>/<chunk>") that start again from 1
// in a fresh data directory; the homeserver remembers transaction ids per
// access token, so without the salt an answer after a reset (or a restore
// from an older backup) could be taken for a repeat and never shown.
func txnID(salt, nonce string) string {
	sum := sha256.Sum256([]byte(salt + "\x00" + nonce))
	return "sb" + hex.EncodeToString(sum[:16])
}

// txnSalt returns this store's transaction-id salt, made once and kept in
// KV ("matrix/txn-salt"), so a restart resends a chunk under the same
// transaction id (the homeserver answers the event it already has) while a
// new data directory gets new ones. Without KV the salt lives as long as
// the process. A KV error is returned: sending under a guessed salt could
// double a chunk after a crash.
func (a *Adapter) txnSalt(ctx context.Context) (string, error) {
	a.saltMu.Lock()
	defer a.saltMu.Unlock()
	if a.salt != "" {
		return a.salt, nil
	}
	if a.opts.KV == nil {
		a.salt = randomTxn()
		return a.salt, nil
	}
	const key = "matrix/txn-salt"
	raw, ok, err := a.opts.KV.KVGet(ctx, key)
	if err != nil {
		return "", fmt.Errorf("reading the transaction-id salt: %w", err)
	}
	if ok && len(raw) > 0 {
		a.salt = string(raw)
		return a.salt, nil
	}
	salt := randomTxn()
	if err := a.opts.KV.KVPut(ctx, key, []byte(salt)); err != nil {
		return "", fmt.Errorf("storing the transaction-id salt: %w", err)
	}
	a.salt = salt
	return salt, nil
}

func randomTxn() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "sbr" + hex.EncodeToString(b[:])
}

// classify turns a homeserver error into the handler's kinds. idempotent
// says the request can be repeated without doubling (a transaction id).
func classify(ctx context.Context, err error, idempotent bool) error {
	if d, ok := retryAfter(err); ok {
		return channels.RateLimited(d, err)
	}
	var he mautrix.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		if he.Response.StatusCode >= 500 {
			return channels.Temporary(err)
		}
		return channels.Permanent(err)
	}
	if ctx.Err() != nil {
		return err
	}
	if idempotent {
		return channels.Temporary(err)
	}
	return channels.Ambiguous(err)
}

// retryAfter reads a 429's wait: retry_after_ms, else Retry-After, else 1s.
func retryAfter(err error) (time.Duration, bool) {
	var he mautrix.HTTPError
	if !errors.As(err, &he) || he.Response == nil || he.Response.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	if he.RespError != nil {
		if ms, ok := he.RespError.ExtraData["retry_after_ms"].(float64); ok && ms > 0 {
			return time.Duration(ms) * time.Millisecond, true
		}
	}
	if s, err := strconv.Atoi(he.Response.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second, true
	}
	return time.Second, true
}
