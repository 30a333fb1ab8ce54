package ui

import "net/http"

// The Channels page (issue 34): every platform of the registry in
// config.yaml's order, then the other channels the daemon runs (the
// console's own web channel): enabled or not, state (ready, connecting,
// failed and restarting, standby on another replica, off), reconnects by
// the supervisor, the last error (redacted, as text) and when, and a link
// to the config editor at the platform's section.

type channelsData struct {
	Channels []PlatformState
}

func (s *Server) channelsPage(w http.ResponseWriter, r *http.Request) {
	ops := s.ops(w, r)
	if ops == nil {
		return
	}
	s.render(w, r, http.StatusOK, "channels", channelsData{Channels: ops.Platforms()})
}
