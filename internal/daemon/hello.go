package daemon

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
)

// The daemon proves itself to the CLI before the CLI sends it a token.
//
// The CLI finds the daemon at server.listen and sends its admin token with
// every request. While the daemon is down, any local program can listen on
// that port and would be sent the token by the next `switchboard status`.
// So the CLI first asks whatever answers there to prove that it knows the
// local admin token (AdminTokenFile, random, readable only by the daemon's
// user): it sends a random nonce to HelloPath, and only the daemon can
// answer HMAC-SHA256(token, helloLabel+nonce). The answer tells nothing
// that helps guess the token (it is 256 random bits), and the nonce is the
// CLI's, so an answer seen once is of no use later. The CLI verifies every
// connection it opens this way (cmd/switchboard, verifiedDial) and sends no
// token over one that fails.
//
// HelloPath needs no token: it reveals nothing but that this is the daemon.
// The configured server.admin_token is never used here: it may be short,
// and an answer keyed with it would let a listener guess it offline.

// HelloPath is the admin API's proof endpoint: POST, form value "nonce" (64
// hex digits), answer {"proof": "<hex>"}.
const HelloPath = "/admin/hello"

// helloLabel keeps the proof apart from any other use of the token.
const helloLabel = "switchboard daemon proof v1\n"

// HelloNonceLen is the length of a nonce in bytes (hex-encoded on the wire).
const HelloNonceLen = 32

// HelloProof is the daemon's answer to nonce when its local admin token is
// token.
func HelloProof(token string, nonce []byte) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(helloLabel))
	m.Write(nonce)
	return hex.EncodeToString(m.Sum(nil))
}

// helloAnswer is HelloPath's JSON answer.
type helloAnswer struct {
	Proof string `json:"proof"`
}

// serveHello answers a nonce with the proof (see HelloPath).
func (d *Daemon) serveHello(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
	nonce, err := hex.DecodeString(r.PostFormValue("nonce"))
	if err != nil || len(nonce) != HelloNonceLen {
		http.Error(w, "nonce: want 64 hex digits", http.StatusBadRequest)
		return
	}
	if d.localToken == "" {
		http.Error(w, "this daemon has no local admin token ("+AdminTokenFile+" could not be written; see its log)", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(helloAnswer{Proof: HelloProof(d.localToken, nonce)})
}
