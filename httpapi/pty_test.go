package httpapi

import (
	"net"
	"testing"
	"time"
)

// The agent's shutdown ends the relays in progress, and refuses new ones.
func TestRelaysCloseAll(t *testing.T) {
	var r relays
	x1, x2 := net.Pipe()
	y1, y2 := net.Pipe()
	defer x2.Close()
	defer y2.Close()
	done := make(chan struct{})
	remove, ok := r.add(closers{x1, y1})
	if !ok {
		t.Fatal("add before shutdown refused")
	}
	go func() {
		defer close(done)
		relay(x1, y1)
		remove()
	}()
	r.closeAll()
	select { // relay returns once both ends are closed
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("relay still running after closeAll")
	}
	if _, ok := r.add(closers{x2, y2}); ok {
		t.Fatal("add after shutdown accepted")
	}
	if len(r.open) != 0 {
		t.Fatalf("%d relays still recorded", len(r.open))
	}
}
