package pki

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// discard is the loops' log in tests.
var discard = slog.New(slog.DiscardHandler)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, GossipKeyLen) }

func TestFollowKeyring(t *testing.T) {
	for _, tt := range []struct {
		name             string
		cluster, applied [][]byte
		want             bool
	}{
		{"none recorded", nil, nil, false},
		{"first keyring", [][]byte{key(1)}, nil, true},
		{"the same", [][]byte{key(1), key(2)}, [][]byte{key(1), key(2)}, false},
		{"a key installed", [][]byte{key(1), key(2)}, [][]byte{key(1)}, true},
		{"another primary", [][]byte{key(2), key(1)}, [][]byte{key(1), key(2)}, true},
		{"recorded keyring emptied", nil, [][]byte{key(1)}, false},
	} {
		if got := FollowKeyring(tt.cluster, tt.applied); got != tt.want {
			t.Errorf("%s: FollowKeyring = %t; want %t", tt.name, got, tt.want)
		}
	}
}

// feedKeyring hands the loop the cluster's keyring, one per round, from
// the test: a send returns once the round before it has finished. Once
// stop is closed it answers with no keys and no change to wait for.
type feedKeyring struct {
	feed chan [][]byte
	stop chan struct{}
}

func (f feedKeyring) GossipKeys() ([][]byte, <-chan struct{}) {
	select {
	case keys := <-f.feed:
		changed := make(chan struct{})
		close(changed)
		return keys, changed
	case <-f.stop:
		return nil, nil
	}
}

// fakeGossip records the keyrings set, and refuses the failOn-th.
type fakeGossip struct {
	failOn int
	calls  int
	set    [][][]byte
}

func (g *fakeGossip) SetKeys(keys [][]byte) error {
	g.calls++
	if g.calls == g.failOn {
		return errors.New("memberlist refused")
	}
	g.set = append(g.set, keys)
	return nil
}

// TestKeyringFollowerRun: the loop takes the cluster's keyring into
// gossip and the key file when it changes, not before one is recorded nor
// again when it is the same, and retries one gossip refused.
func TestKeyringFollowerRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gossip.key")
	cluster := feedKeyring{feed: make(chan [][]byte), stop: make(chan struct{})}
	g := &fakeGossip{failOn: 2}
	f := KeyringFollower{Cluster: cluster, Gossip: g, Path: path, Log: discard}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	rotated := [][]byte{key(2), key(1)}
	for _, keys := range [][][]byte{nil, {key(1)}, {key(1)}, rotated, rotated, rotated} {
		cluster.feed <- keys
	}
	cancel()
	close(cluster.stop)
	<-done

	if g.calls != 3 || len(g.set) != 2 || !SameKeys(g.set[0], [][]byte{key(1)}) || !SameKeys(g.set[1], rotated) {
		t.Errorf("gossip set %x in %d calls; want [k1] then [k2 k1] in 3 (one refused)", g.set, g.calls)
	}
	onDisk, err := LoadGossipKeys(path)
	if err != nil || !SameKeys(onDisk, rotated) {
		t.Errorf("key file %x, %v; want %x", onDisk, err, rotated)
	}
}

// offerClock is a Timer whose waits are recorded and end at once, or
// never when block.
type offerClock struct {
	waits []time.Duration
	block bool
}

func (*offerClock) Now() time.Time { return t0 }

func (c *offerClock) After(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	if c.block {
		return nil
	}
	ch := make(chan time.Time, 1)
	ch <- t0
	return ch
}

// fakeRecorder is a cluster that records the CA at the recordAt-th offer
// (never when 0), refusing those before it.
type fakeRecorder struct {
	recordAt, offers int
}

func (r *fakeRecorder) HasClusterCA() bool { return r.recordAt > 0 && r.offers >= r.recordAt }

func (r *fakeRecorder) OfferClusterCA(context.Context) error {
	r.offers++
	if r.offers < r.recordAt || r.recordAt == 0 {
		return errors.New("no leader")
	}
	return nil
}

// TestCAOffererRun: the CA is offered every Every until the state holds
// it, not at all when it does, and no longer once ctx ends.
func TestCAOffererRun(t *testing.T) {
	for _, tt := range []struct {
		name     string
		recordAt int
		offers   int
	}{
		{"recorded at the third offer", 3, 3},
		{"recorded at the first", 1, 1},
	} {
		rec, clock := &fakeRecorder{recordAt: tt.recordAt}, &offerClock{}
		CAOfferer{Cluster: rec, Every: 2 * time.Second, Clock: clock, Log: discard}.Run(context.Background())
		if rec.offers != tt.offers || len(clock.waits) != tt.offers || clock.waits[0] != 2*time.Second {
			t.Errorf("%s: %d offers, waits %v; want %d offers, each followed by 2s", tt.name, rec.offers, clock.waits, tt.offers)
		}
	}

	rec := &fakeRecorder{recordAt: 1, offers: 1}
	CAOfferer{Cluster: rec, Every: time.Second, Clock: &offerClock{}, Log: discard}.Run(context.Background())
	if rec.offers != 1 {
		t.Errorf("offered a CA the state holds already")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec = &fakeRecorder{}
	CAOfferer{Cluster: rec, Every: time.Second, Clock: &offerClock{block: true}, Log: discard}.Run(ctx)
	if rec.offers != 1 {
		t.Errorf("%d offers after ctx ended; want 1", rec.offers)
	}
}

// TestChangeKeyring: root's three steps of a rotation, and their refusals.
func TestChangeKeyring(t *testing.T) {
	ring := [][]byte{key(1), key(2)}
	tests := []struct {
		op      string
		key     []byte
		want    [][]byte
		wantErr string
	}{
		{"install", key(3), [][]byte{key(1), key(2), key(3)}, ""},
		{"install", key(2), nil, "already"},
		{"use", key(2), [][]byte{key(2), key(1)}, ""},
		{"use", key(3), nil, "install it first"},
		{"remove", key(2), [][]byte{key(1)}, ""},
		{"remove", key(1), nil, "primary"},
		{"remove", key(3), nil, "not in the keyring"},
		{"rotate", key(3), nil, "want install, use or remove"},
	}
	for _, tt := range tests {
		got, err := ChangeKeyring(ring, tt.op, tt.key, 3)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ChangeKeyring(%s %x) = %v; want an error saying %q", tt.op, tt.key[0], err, tt.wantErr)
			}
			continue
		}
		if err != nil || !SameKeys(got, tt.want) {
			t.Errorf("ChangeKeyring(%s %x) = %x, %v; want %x", tt.op, tt.key[0], got, err, tt.want)
		}
	}
	if !SameKeys(ring, [][]byte{key(1), key(2)}) {
		t.Errorf("ChangeKeyring changed its input: %x", ring)
	}
	if _, err := ChangeKeyring(ring, "install", key(3), 2); err == nil || !strings.Contains(err.Error(), "at most 2") {
		t.Errorf("install into a full keyring = %v; want an error saying it holds at most 2", err)
	}
}
