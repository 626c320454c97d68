package clock

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestWall: After delivers once after d, the ticker every d until it is
// stopped, both on the time Now reads.
func TestWall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Wall
		start := c.Now()
		<-c.After(3 * time.Second)
		if got := c.Now().Sub(start); got != 3*time.Second {
			t.Errorf("After(3s) delivered after %v", got)
		}
		tick, stop := c.NewTicker(time.Second)
		for i := range 3 {
			at := <-tick
			if want := start.Add(time.Duration(4+i) * time.Second); !at.Equal(want) {
				t.Errorf("tick %d at %v; want %v", i, at, want)
			}
		}
		stop()
		select {
		case <-tick:
			t.Error("a stopped ticker delivered")
		case <-c.After(5 * time.Second):
		}
	})
}
