// Package clock is the wall clock the agent hands its loops (the Clock
// and Timer interfaces of leader, worker, consensus, pki and topology,
// which their pure code never reads itself), and the tests that run those
// loops on real or synctest time.
package clock

import "time"

// Wall is the time package's clock.
type Wall struct{}

// Now is time.Now.
func (Wall) Now() time.Time { return time.Now() }

// After delivers once, after d.
func (Wall) After(d time.Duration) <-chan time.Time { return time.After(d) }

// NewTicker delivers every d until stop is called.
func (Wall) NewTicker(d time.Duration) (c <-chan time.Time, stop func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
