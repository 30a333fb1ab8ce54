package channeltest

import (
	"bytes"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
)

// FileOut: a file the bot sends (channels.FileSender) is on the platform
// once, with its name, its bytes and its caption. Skipped, saying so, for
// an adapter that sends no files; an adapter that does needs a FileDriver.
const FileOut Behaviour = "FileSentOnce"

// SentFile is a file the bot sent, as the platform shows it.
type SentFile struct {
	Name    string
	Data    []byte // nil where the platform shows no bytes (the terminal: a line naming the file)
	Caption string
}

// FileDriver is a Driver of a platform the bot sends files to.
type FileDriver interface {
	Driver
	// Files returns the files the bot sent to target's chat, oldest first.
	Files(target channels.Target) []SentFile
}

func (s suite) testFileOut(t *testing.T, r *rig) {
	fs, ok := r.ch.(channels.FileSender)
	if !ok {
		t.Skip("the adapter sends no files (it does not implement channels.FileSender); send_file tells the model so")
	}
	fd := need[FileDriver](t, r.drv, "channeltest.FileDriver")
	if fs.MaxFileSize() < 0 {
		t.Fatalf("MaxFileSize = %d; want the limit in bytes, or 0 for none", fs.MaxFileSize())
	}
	m := r.converse(t, r.drv.DirectTarget(), "send me the totals") // a file answers a user
	target := m.Target()
	data := []byte("id,total\n1,42\n2,17\n")
	id, err := fs.SendFile(r.ctx, channels.OutgoingFile{Target: target, Name: "totals.csv", Path: "out/totals.csv",
		MIME: "text/csv", Data: data, Caption: "the totals", Nonce: r.nonce()})
	if err != nil {
		t.Fatalf("SendFile: %v", err)
	}
	if id == "" {
		t.Error("SendFile returned an empty id")
	}
	var got []SentFile
	r.drv.WaitFor(t, "the file on the platform", func() bool {
		got = fd.Files(target)
		return len(got) > 0
	})
	if len(got) != 1 {
		t.Fatalf("the platform shows %d files, want 1", len(got))
	}
	f := got[0]
	if f.Name != "totals.csv" || f.Caption != "the totals" || f.Data != nil && !bytes.Equal(f.Data, data) {
		t.Errorf("the platform shows %s (%q) captioned %q; want totals.csv with the bytes sent, captioned %q",
			f.Name, f.Data, f.Caption, "the totals")
	}
}
