package netaddr_test

import (
	"testing"

	"github.com/switchboard-bot/switchboard/internal/netaddr"
)

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		listen string
		want   bool
	}{
		{"127.0.0.1:8080", true},
		{"127.8.9.10:8080", true},
		{"[::1]:8080", true},
		{"localhost:8080", true},
		{":8080", false},
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{"192.168.1.5:8080", false},
		{"example.com:8080", false},
		{"LOCALHOST:8080", false}, // the daemon's rule has always been the exact name
		{"127.0.0.1", false},      // no port: not a listen address
		{"", false},
	}
	for _, tt := range tests {
		if got := netaddr.IsLoopback(tt.listen); got != tt.want {
			t.Errorf("IsLoopback(%q) = %v, want %v", tt.listen, got, tt.want)
		}
	}
}
