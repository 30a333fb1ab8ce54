package faketelegram

import (
	"net"
	"testing"
	"time"
)

// closedByPeer tells a connection the other end closed from one that is
// open or has data waiting, without consuming any of it.
func TestClosedByPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if closedByPeer(server) {
		t.Fatal("an open connection reads as closed")
	}
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	// Data waiting: open, and the peek does not take the byte.
	if closedByPeer(server) {
		t.Fatal("a connection with data waiting reads as closed")
	}
	b := make([]byte, 2)
	if n, _ := server.Read(b); n != 1 || b[0] != 'x' {
		t.Fatalf("after the peek the server read %q, want \"x\"", b[:n])
	}
	client.Close()
	deadline := time.Now().Add(time.Minute) // a hang detector
	for !closedByPeer(server) {
		if time.Now().After(deadline) {
			t.Fatal("a closed connection never read as closed")
		}
		time.Sleep(time.Millisecond)
	}
}
