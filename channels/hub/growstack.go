package hub

// growStack grows the calling goroutine's stack to 32 KiB while it is still
// shallow. A turn (agent, model call through net/http, store) needs 16–32
// KiB of stack, and a session worker reaches it with a small one: fresh, or
// shrunk by the collector while it waited for a turn slot. Grown on demand,
// the runtime copied the deep stack once per doubling, frame by frame; grown
// here, one copy moves a few frames. (CockroachDB's util/growstack does the
// same.)
//
//go:noinline
func growStack() {
	var buf [16 << 10]byte
	use(buf[:])
}

// use keeps buf on the stack.
//
//go:noinline
func use(b []byte) { _ = b[len(b)-1] }
