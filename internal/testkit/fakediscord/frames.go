package fakediscord

import (
	"bytes"
	"compress/zlib"
	"strconv"
)

// Encoding of the gateway's dispatch frames, the hot path of a load run:
// every message the fake injects or the bot sends is dispatched as one.

// dispatchFrame is the op 0 payload of e, byte for byte what json.Marshal
// makes of gatewayPayload{Op: 0, D: e.d, S: &e.seq, T: &e.t} (e.d is
// already compact JSON and event names need no escaping) without
// re-scanning e.d.
func dispatchFrame(e event) []byte {
	b := make([]byte, 0, len(e.d)+len(e.t)+40)
	b = strconv.AppendInt(append(b, `{"op":`...), opDispatch, 10)
	b = append(b, `,"d":`...)
	b = append(b, e.d...)
	b = append(b, `,"s":`...)
	b = strconv.AppendInt(b, e.seq, 10)
	b = append(b, `,"t":"`...)
	b = append(b, e.t...)
	return append(b, `"}`...)
}

// payloadCompressor zlib-compresses gateway payloads, each into a zlib
// stream of its own, as Discord's payload compression does (discordgo
// inflates every binary message with a fresh zlib reader). A connection's
// writer owns one and resets it per payload: a new flate writer allocates
// ~600 KB, and at the default level every reset clears a 512 KB hash table,
// so the fake uses BestSpeed (any level inflates the same way).
type payloadCompressor struct {
	buf bytes.Buffer
	zw  *zlib.Writer
}

// compress returns b compressed; the result is valid until the next call.
func (pc *payloadCompressor) compress(b []byte) []byte {
	pc.buf.Reset()
	if pc.zw == nil {
		pc.zw, _ = zlib.NewWriterLevel(&pc.buf, zlib.BestSpeed) // a valid level never fails
	} else {
		pc.zw.Reset(&pc.buf)
	}
	_, _ = pc.zw.Write(b)
	_ = pc.zw.Close()
	return pc.buf.Bytes()
}
