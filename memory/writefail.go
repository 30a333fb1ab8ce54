package memory

import (
	"errors"
	"syscall"
)

// Write failures of the durable store (issue 13). A write can fail for a
// while — the disk is full, a quota is hit, the file system went read-only or
// reports I/O errors — and work again later without a restart. Such a failure
// is not the message's fault and not the model's: the hub keeps the message
// pending and retries, delivery keeps a receipt it could not write in memory.
// IsStorageError recognizes them by the file system's errno anywhere in the
// error chain.

// storageErrnos are the file system errors that mean "the store cannot write
// now; try again later".
var storageErrnos = [...]error{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO, syscall.EFBIG}

// IsStorageError reports whether err is a failure of the durable store to
// write (disk full, quota, read-only or failing file system), as opposed to a
// model, platform or validation error.
func IsStorageError(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range storageErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
