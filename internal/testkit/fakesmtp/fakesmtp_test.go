package fakesmtp

import (
	"fmt"
	"testing"
)

// A test that starts the fake and ends before any client connects must not
// hang in cleanup (the server's Close missed a listener Serve had not
// registered yet, and cleanup waited for Serve forever).
func TestCleanupRightAfterStart(t *testing.T) {
	for i := range 200 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { Start(t, Options{}) })
	}
}
