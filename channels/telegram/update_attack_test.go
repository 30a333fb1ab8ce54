package telegram

// Attacks from outside (helper A5): the adapter's own update types (update.go) against go-telegram/bot's
// models.Update, which the adapter decoded into before (965f1ce).

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/go-telegram/bot/models"
)

// kindsOfUpdates are updates of every kind of message a user can send, as
// Telegram sends them.
var kindsOfUpdates = map[string]string{
	"photo with caption": `{"update_id":1,"message":{"message_id":1,"from":{"id":42,"is_bot":false,"first_name":"Ana"},"chat":{"id":42,"type":"private"},"date":1764201600,
		"photo":[{"file_id":"p1","file_unique_id":"u1","width":90,"height":90,"file_size":1000},{"file_id":"p2","file_unique_id":"u2","width":800,"height":800,"file_size":90000}],
		"caption":"what is this?","caption_entities":[{"type":"bold","offset":0,"length":4}]}}`,
	"document": `{"update_id":2,"message":{"message_id":2,"from":{"id":42,"is_bot":false,"first_name":"Ana"},"chat":{"id":42,"type":"private"},"date":1764201600,
		"document":{"file_id":"d1","file_unique_id":"du1","file_name":"report.pdf","mime_type":"application/pdf","file_size":12345,
		"thumbnail":{"file_id":"t","file_unique_id":"tu","width":1,"height":1}}}}`,
	"voice": `{"update_id":3,"message":{"message_id":3,"from":{"id":42,"is_bot":false,"first_name":"Ana"},"chat":{"id":42,"type":"private"},"date":1764201600,
		"voice":{"file_id":"v1","file_unique_id":"vu1","duration":3,"mime_type":"audio/ogg","file_size":4000}}}`,
	"audio": `{"update_id":4,"message":{"message_id":4,"from":{"id":42,"is_bot":false,"first_name":"Ana"},"chat":{"id":42,"type":"private"},"date":1764201600,
		"audio":{"file_id":"a1","file_unique_id":"au1","duration":200,"performer":"X","title":"Y","file_name":"y.mp3","mime_type":"audio/mpeg","file_size":5000000}}}`,
	"group text_mention of the bot": `{"update_id":5,"message":{"message_id":5,"from":{"id":43,"is_bot":false,"first_name":"Bo","last_name":"Ng","username":"bo"},
		"chat":{"id":-100,"title":"T","type":"group"},"date":1764201600,"text":"Switchboard what now",
		"entities":[{"type":"text_mention","offset":0,"length":11,"user":{"id":` + itoa(botID) + `,"is_bot":true,"first_name":"Switchboard"}}]}}`,
	"group command with bot name": `{"update_id":6,"message":{"message_id":6,"from":{"id":43,"is_bot":false,"first_name":"Bo"},"chat":{"id":-100,"type":"group"},"date":1764201600,
		"text":"/help@` + botName + `","entities":[{"type":"bot_command","offset":0,"length":` + itoa(int64(len("/help@"+botName))) + `}]}}`,
	"group mention in the middle": `{"update_id":7,"message":{"message_id":7,"from":{"id":43,"is_bot":false,"first_name":"Bo"},"chat":{"id":-100,"type":"supergroup"},"date":1764201600,
		"text":"hey @` + botName + `, help","entities":[{"type":"mention","offset":4,"length":` + itoa(int64(len(botName)+1)) + `}]}}`,
	"reply to a user with a quote": `{"update_id":8,"message":{"message_id":8,"from":{"id":43,"is_bot":false,"first_name":"Bo"},"chat":{"id":-100,"type":"supergroup"},"date":1764201600,
		"text":"agreed","quote":{"text":"lunch","position":0},
		"reply_to_message":{"message_id":3,"from":{"id":44,"is_bot":false,"first_name":"Cy"},"chat":{"id":-100,"type":"supergroup"},"date":1764201500,"caption":"lunch at noon",
		"photo":[{"file_id":"rp","file_unique_id":"rpu","width":10,"height":10}]}}}`,
	"forum topic message": `{"update_id":9,"message":{"message_id":50,"message_thread_id":49,"is_topic_message":true,"from":{"id":43,"is_bot":false,"first_name":"Bo"},
		"chat":{"id":-1001,"type":"supergroup","is_forum":true},"date":1764201600,"text":"@` + botName + ` status",
		"entities":[{"type":"mention","offset":0,"length":` + itoa(int64(len(botName)+1)) + `}]}}`,
	"sender_chat anonymous admin": `{"update_id":10,"message":{"message_id":11,"from":{"id":1087968824,"is_bot":true,"first_name":"Group","username":"GroupAnonymousBot"},
		"sender_chat":{"id":-1002,"title":"Ops","username":"opsgroup","type":"supergroup"},"chat":{"id":-1002,"title":"Ops","type":"supergroup"},"date":1764201600,
		"text":"/status@` + botName + `","entities":[{"type":"bot_command","offset":0,"length":` + itoa(int64(len("/status@"+botName))) + `}]}}`,
	"automatic forward": `{"update_id":11,"message":{"message_id":12,"sender_chat":{"id":-1003,"title":"News","type":"channel"},"chat":{"id":-1002,"type":"supergroup"},
		"date":1764201600,"is_automatic_forward":true,"text":"post",
		"forward_origin":{"type":"channel","chat":{"id":-1003,"type":"channel","title":"News"},"message_id":3,"date":1764201000}}}`,
	"edited":             `{"update_id":12,"edited_message":{"message_id":7,"from":{"id":42,"is_bot":false,"first_name":"Ana"},"chat":{"id":42,"type":"private"},"date":1,"edit_date":2,"text":"hello!"}}`,
	"private from a bot": `{"update_id":13,"message":{"message_id":13,"from":{"id":77,"is_bot":true,"first_name":"Other"},"chat":{"id":77,"type":"private"},"date":1764201600,"text":"beep"}}`,
	"sticker and location (not read)": `{"update_id":14,"message":{"message_id":14,"from":{"id":42,"is_bot":false,"first_name":"Ana"},"chat":{"id":42,"type":"private"},"date":1764201600,
		"sticker":{"file_id":"s","file_unique_id":"su","type":"regular","width":512,"height":512,"is_animated":false,"is_video":false},"location":{"latitude":1.5,"longitude":2.5}}}`,
}

// Held: every field the adapter reads decodes to the same value through its
// own types as through models.Update, for every kind of message; and so the
// normalized message is the same as before.
func TestOwnUpdateTypesReadWhatModelsUpdateRead(t *testing.T) {
	for name, raw := range kindsOfUpdates {
		t.Run(name, func(t *testing.T) {
			var old models.Update
			if err := json.Unmarshal([]byte(raw), &old); err != nil {
				t.Fatalf("models.Update refuses the test update: %v", err)
			}
			var upd update
			if err := json.Unmarshal([]byte(raw), &upd); err != nil {
				t.Fatalf("the adapter's update refuses what models.Update took: %v", err)
			}
			if upd.ID != old.ID {
				t.Errorf("update_id %d, models.Update %d", upd.ID, old.ID)
			}
			sameMessage(t, "message", upd.Message, old.Message)
			sameMessage(t, "edited_message", upd.EditedMessage, old.EditedMessage)
		})
	}
}

// sameMessage compares every field of the adapter's message with the field
// of the same name in models.Message.
func sameMessage(t *testing.T, path string, m *message, old *models.Message) {
	t.Helper()
	if m == nil || old == nil {
		if (m == nil) != (old == nil) {
			t.Errorf("%s: present %v, models.Message present %v", path, m != nil, old != nil)
		}
		return
	}
	mv, ov := reflect.ValueOf(m).Elem(), reflect.ValueOf(old).Elem()
	for i := range mv.NumField() {
		f := mv.Type().Field(i)
		of := ov.FieldByName(f.Name)
		if !of.IsValid() {
			t.Errorf("%s.%s: models.Message has no such field", path, f.Name)
			continue
		}
		if tag, otag := f.Tag.Get("json"), ov.Type().Field(fieldIndex(ov.Type(), f.Name)).Tag.Get("json"); strings.Split(tag, ",")[0] != strings.Split(otag, ",")[0] {
			t.Errorf("%s.%s: json name %q, models.Message %q", path, f.Name, tag, otag)
		}
		switch f.Name {
		case "ReplyToMessage":
			sameMessage(t, path+".reply_to_message", m.ReplyToMessage, old.ReplyToMessage)
		case "ForumTopicCreated":
			if (m.ForumTopicCreated == nil) != (old.ForumTopicCreated == nil) {
				t.Errorf("%s.forum_topic_created: present %v, models.Message %v", path, m.ForumTopicCreated != nil, old.ForumTopicCreated != nil)
			}
		default:
			if !reflect.DeepEqual(mv.Field(i).Interface(), of.Interface()) {
				t.Errorf("%s.%s: %#v, models.Message %#v", path, f.Name, mv.Field(i).Interface(), of.Interface())
			}
		}
	}
}

func fieldIndex(t reflect.Type, name string) int {
	f, _ := t.FieldByName(name)
	return f.Index[0]
}

// Updates with fields of the wrong type in what the adapter reads cannot be
// represented: polling and the webhook confirm and log them. (The webhook
// answered 400 once, and Telegram redelivers any non-2xx answer until it
// gives up.)
func TestWrongTypedUpdatesAreConfirmed(t *testing.T) {
	cases := map[string]string{
		"text is a number":         `{"update_id":900,"message":{"message_id":1,"from":{"id":42,"is_bot":false,"first_name":"A"},"chat":{"id":42,"type":"private"},"date":1,"text":5}}`,
		"chat is an array":         `{"update_id":901,"message":{"message_id":1,"from":{"id":42,"is_bot":false,"first_name":"A"},"chat":[],"date":1,"text":"hi"}}`,
		"message is a string":      `{"update_id":902,"message":"hello"}`,
		"reply text is an object":  `{"update_id":903,"message":{"message_id":2,"chat":{"id":42,"type":"private"},"date":1,"text":"x","reply_to_message":{"message_id":1,"chat":{"id":42,"type":"private"},"date":1,"text":{}}}}`,
		"entities offset a string": `{"update_id":904,"message":{"message_id":3,"chat":{"id":42,"type":"private"},"date":1,"text":"x","entities":[{"type":"mention","offset":"0","length":1}]}}`,
		"deep reply nesting":       `{"update_id":905,"message":` + strings.Repeat(`{"message_id":1,"chat":{"id":42,"type":"private"},"date":1,"text":"x","reply_to_message":`, 6000) + `null` + strings.Repeat(`}`, 6000) + `}`,
		// Beyond encoding/json's nesting limit (10000) no part of the
		// update decodes; updateIDOf still finds update_id (once, the
		// offset stayed and the update was fetched again and again).
		"nesting beyond the decoder's limit": `{"update_id":906,"message":` + strings.Repeat(`{"message_id":1,"chat":{"id":42,"type":"private"},"date":1,"reply_to_message":`, 10001) + `null` + strings.Repeat(`}`, 10001) + `}`,
	}
	for name, raw := range cases {
		t.Run("getUpdates/"+name, func(t *testing.T) {
			ch := newBareAdapter(t, ModePolling)
			logs := &syncBuffer{}
			ch.log = slog.New(slog.NewTextHandler(logs, nil))
			var head struct {
				ID int64 `json:"update_id"`
			}
			head.ID = updateIDPrefix(raw)
			rec := newRecorder()
			var offset int64
			if _, err := ch.handleBatch(context.Background(), rec.sink(), []json.RawMessage{json.RawMessage(raw)}, &offset); err != nil {
				t.Fatalf("handleBatch: %v", err)
			}
			if offset != head.ID+1 {
				t.Errorf("offset %d: the update is fetched again (want %d)", offset, head.ID+1)
			}
			if name != "deep reply nesting" && !strings.Contains(logs.String(), "skipped") {
				t.Errorf("not logged: %s", logs.String())
			}
		})
		t.Run("webhook/"+name, func(t *testing.T) {
			ch := newBareAdapter(t, ModeWebhook)
			rec := newRecorder()
			ch.sink.Store(&sinkBox{rec.sink()})
			req := httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(raw))
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", ch.opts.WebhookSecret)
			w := httptest.NewRecorder()
			ch.WebhookHandler().ServeHTTP(w, req)
			if w.Code/100 != 2 {
				t.Errorf("webhook answered %d: Telegram redelivers the same update until it gives up (polling confirms it)", w.Code)
			}
			if got := rec.all(); len(got) > 1 {
				t.Errorf("delivered %d messages", len(got))
			}
		})
	}
}

// updateIDPrefix reads the update_id the test updates start with.
func updateIDPrefix(raw string) int64 {
	var id int64
	rest, ok := strings.CutPrefix(raw, `{"update_id":`)
	for ok && len(rest) > 0 && rest[0] >= '0' && rest[0] <= '9' {
		id, rest = id*10+int64(rest[0]-'0'), rest[1:]
	}
	return id
}
