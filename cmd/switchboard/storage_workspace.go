package main

import (
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
	"github.com/switchboard-bot/switchboard/memory/postgres"

	bbolt "go.etcd.io/bbolt"
)

// readBoltFiles reads the chats' workspace files (memory/bolt/workspace.go)
// for `storage migrate`: every file with its record and content.
func readBoltFiles(tx *bbolt.Tx, d *postgres.Import) error {
	return bolt.ForEachFileTx(tx, func(chat string, fi memory.FileInfo, content []byte) error {
		d.Files = append(d.Files, postgres.ImportFile{Chat: chat, Info: fi, Content: content})
		return nil
	})
}
