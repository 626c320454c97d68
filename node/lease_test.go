package node

import (
	"testing"
	"time"
)

// TestLeaseTableKeepsTheLatestEnd: the leader judges a node by the latest
// end of any lease it granted it. A later renewal granted a shorter TTL
// (the cluster shrank) may not have reached the node, which then still
// holds the longer lease: it must not bring the end forward.
func TestLeaseTableKeepsTheLatestEnd(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var l leaseTable
	if got := l.HeldUntil("n1"); !got.IsZero() {
		t.Fatalf("HeldUntil before any renewal = %v; want zero", got)
	}
	l.renew("n1", t0, 60*time.Second)
	l.renew("n1", t0.Add(10*time.Second), 10*time.Second) // shorter, may be lost
	if got, want := l.HeldUntil("n1"), t0.Add(60*time.Second); !got.Equal(want) {
		t.Errorf("HeldUntil = %v; want %v (the longer grant)", got, want)
	}
	l.renew("n1", t0.Add(55*time.Second), 10*time.Second)
	if got, want := l.HeldUntil("n1"), t0.Add(65*time.Second); !got.Equal(want) {
		t.Errorf("HeldUntil = %v; want %v", got, want)
	}
	if got := l.HeldUntil("n2"); !got.IsZero() {
		t.Errorf("HeldUntil(n2) = %v; want zero", got)
	}
}
