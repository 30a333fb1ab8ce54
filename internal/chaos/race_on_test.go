//go:build race

package chaos

// raceEnabled: the race detector slows the in-process fakes several times
// over, which distorts the timing the replica tests measure.
const raceEnabled = true
