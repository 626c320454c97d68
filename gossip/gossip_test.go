package gossip

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// recordHandler is a slog.Handler that keeps every record, with its
// attributes flattened into a string, for assertions on logs. Handlers
// derived with WithAttrs share the root's store.
type recordHandler struct {
	attrs []slog.Attr
	store *recordStore
}

type recordStore struct {
	mu   sync.Mutex
	recs []loggedRecord
}

type loggedRecord struct {
	Level   slog.Level
	Message string
	Attrs   string
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	for _, a := range h.attrs {
		fmt.Fprintf(&b, "%s=%v ", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, "%s=%v ", a.Key, a.Value)
		return true
	})
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	h.store.recs = append(h.store.recs, loggedRecord{r.Level, r.Message, b.String()})
	return nil
}

func (h *recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &recordHandler{attrs: append(append([]slog.Attr{}, h.attrs...), as...), store: h.store}
}

func (h *recordHandler) WithGroup(string) slog.Handler { return h }

func (h *recordHandler) all() []loggedRecord {
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	return append([]loggedRecord(nil), h.store.recs...)
}

func newRecordHandler() *recordHandler { return &recordHandler{store: &recordStore{}} }

type nodeOpt func(*Config)

func withMeta(m Meta) nodeOpt { return func(c *Config) { c.Meta = m } }
func withKey(k []byte) nodeOpt {
	return func(c *Config) {
		if k != nil {
			c.Keys = [][]byte{k}
		}
	}
}
func withLogger(l *slog.Logger) nodeOpt { return func(c *Config) { c.Logger = l } }
func fastProbes() nodeOpt {
	return func(c *Config) { c.ProbeInterval = 200 * time.Millisecond; c.SuspicionMult = 2 }
}

// quietLogger discards logs; GOSSIP_DEBUG=1 sends them to stderr when
// debugging a test.
func quietLogger() *slog.Logger {
	if os.Getenv("GOSSIP_DEBUG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startNode starts a gossip node on 127.0.0.1 with a free port and shuts it
// down when the test ends.
func startNode(t *testing.T, name string, opts ...nodeOpt) *Gossip {
	t.Helper()
	cfg := Config{
		Name:     name,
		BindAddr: "127.0.0.1",
		Meta:     Meta{APIAddr: "127.0.0.1:1", GPUs: 1, Switch: "leaf-" + name},
		Logger:   quietLogger(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	t.Cleanup(func() {
		if err := g.Shutdown(); err != nil {
			t.Errorf("Shutdown(%s): %v", name, err)
		}
	})
	return g
}

func join(t *testing.T, g *Gossip, via *Gossip) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := g.Join(ctx, []string{via.LocalAddr()}); err != nil {
		t.Fatalf("%s.Join(%s): %v", g.LocalName(), via.LocalAddr(), err)
	}
}

// waitFor polls cond every 20ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitEvent reads g's events until one of kind about name arrives.
func waitEvent(t *testing.T, g *Gossip, kind EventKind, name string, timeout time.Duration) Event {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-g.Events():
			if !ok {
				t.Fatalf("%s: events closed while waiting for %v of %s", g.LocalName(), kind, name)
			}
			if ev.Kind == kind && ev.Member.Name == name {
				return ev
			}
		case <-timer.C:
			t.Fatalf("%s: no %v event for %s within %v", g.LocalName(), kind, name, timeout)
		}
	}
}

func member(g *Gossip, name string) (Member, bool) {
	for _, m := range g.Members() {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}

func aliveNames(g *Gossip) string {
	var names []string
	for _, m := range g.Members() {
		if m.Status == StatusAlive {
			names = append(names, m.Name)
		}
	}
	return strings.Join(names, ",")
}

func TestJoinMembersMetaAndUpdate(t *testing.T) {
	t.Parallel()
	metaOf := func(name string) Meta {
		return Meta{APIAddr: "127.0.0.1:80", RaftAddr: "127.0.0.1:81", GPUs: 8, GPUModel: "H100",
			Switch: "leaf-" + name, SwitchParent: "spine0", Version: "test", BootstrapExpect: 3}
	}
	names := []string{"n1", "n2", "n3"}
	nodes := make([]*Gossip, len(names))
	for i, n := range names {
		nodes[i] = startNode(t, n, withMeta(metaOf(n)))
	}
	join(t, nodes[1], nodes[0])
	join(t, nodes[2], nodes[1])
	for _, g := range nodes {
		waitFor(t, 5*time.Second, g.LocalName()+" sees n1,n2,n3", func() bool { return aliveNames(g) == "n1,n2,n3" })
		for _, m := range g.Members() {
			if m.Meta != metaOf(m.Name) {
				t.Errorf("%s sees %s with meta %+v; want %+v", g.LocalName(), m.Name, m.Meta, metaOf(m.Name))
			}
			if m.Name == g.LocalName() && m.Addr != g.LocalAddr() {
				t.Errorf("%s sees itself at %s; LocalAddr = %s", g.LocalName(), m.Addr, g.LocalAddr())
			}
		}
	}

	// A fourth node joins through any member, here the last one.
	n4 := startNode(t, "n4", withMeta(metaOf("n4")))
	join(t, n4, nodes[2])
	nodes = append(nodes, n4)
	for _, g := range nodes {
		waitFor(t, 5*time.Second, g.LocalName()+" sees 4 nodes", func() bool { return aliveNames(g) == "n1,n2,n3,n4" })
	}
	ev := waitEvent(t, nodes[0], EventJoin, "n4", 5*time.Second)
	if ev.Member.Meta != metaOf("n4") || ev.Member.Status != StatusAlive {
		t.Errorf("join event for n4 = %+v", ev)
	}

	// A metadata update propagates to everyone, with an update event.
	updated := metaOf("n2")
	updated.GPUs, updated.HasRaftState = 4, true
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := nodes[1].UpdateMeta(ctx, updated); err != nil {
		t.Fatalf("UpdateMeta: %v", err)
	}
	for _, g := range nodes {
		waitFor(t, 5*time.Second, g.LocalName()+" sees n2's new meta", func() bool {
			m, ok := member(g, "n2")
			return ok && m.Meta == updated
		})
	}
	if ev := waitEvent(t, nodes[3], EventUpdate, "n2", 5*time.Second); ev.Member.Meta != updated {
		t.Errorf("update event meta = %+v; want %+v", ev.Member.Meta, updated)
	}
	if err := nodes[1].UpdateMeta(ctx, Meta{GPUs: -1}); err == nil {
		t.Errorf("UpdateMeta(invalid) = nil; want error")
	}
}

func TestLeaveIsSeenAsLeft(t *testing.T) {
	t.Parallel()
	a, b, c := startNode(t, "a"), startNode(t, "b"), startNode(t, "c")
	join(t, b, a)
	join(t, c, a)
	waitFor(t, 5*time.Second, "a sees 3", func() bool { return aliveNames(a) == "a,b,c" })
	waitFor(t, 5*time.Second, "b sees 3", func() bool { return aliveNames(b) == "a,b,c" })

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := c.Leave(ctx); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	for _, g := range []*Gossip{a, b} {
		ev := waitEvent(t, g, EventLeave, "c", 5*time.Second)
		if ev.Member.Status != StatusLeft {
			t.Errorf("%s: leave event status = %s; want left", g.LocalName(), ev.Member.Status)
		}
		m, ok := member(g, "c")
		if !ok || m.Status != StatusLeft || m.Meta.Switch != "leaf-c" {
			t.Errorf("%s: Members() has c = %+v, %v; want status left with its meta", g.LocalName(), m, ok)
		}
	}
	if err := c.Shutdown(); err != nil {
		t.Fatalf("Shutdown after leave: %v", err)
	}
}

func TestShutdownWithoutLeaveIsSeenAsFailed(t *testing.T) {
	t.Parallel()
	a := startNode(t, "a", fastProbes())
	b := startNode(t, "b", fastProbes())
	c := startNode(t, "c", fastProbes())
	join(t, b, a)
	join(t, c, b)
	waitFor(t, 5*time.Second, "a sees 3", func() bool { return aliveNames(a) == "a,b,c" })
	waitFor(t, 5*time.Second, "b sees 3", func() bool { return aliveNames(b) == "a,b,c" })

	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*Gossip{a, b} {
		ev := waitEvent(t, g, EventFail, "c", 15*time.Second)
		if ev.Member.Status != StatusFailed {
			t.Errorf("%s: fail event status = %s; want failed", g.LocalName(), ev.Member.Status)
		}
		if m, ok := member(g, "c"); !ok || m.Status != StatusFailed {
			t.Errorf("%s: Members() has c = %+v, %v; want failed", g.LocalName(), m, ok)
		}
	}
}

func TestJoinUnreachableRetriesUntilDeadline(t *testing.T) {
	t.Parallel()
	// A port nobody listens on: bind, note it, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()

	h := newRecordHandler()
	g := startNode(t, "lonely", withLogger(slog.New(h)))
	ctx, cancel := context.WithTimeout(t.Context(), 1200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = g.Join(ctx, []string{dead})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Join(%s) = %v; want context.DeadlineExceeded", dead, err)
	}
	if el := time.Since(start); el < time.Second {
		t.Errorf("Join returned after %v; want it to retry until the 1.2s deadline", el)
	}
	var rounds, fromMemberlist int
	for _, r := range h.all() {
		if r.Message == "join attempt failed; retrying" && strings.Contains(r.Attrs, dead) {
			rounds++
		}
		if strings.Contains(r.Attrs, "lib=memberlist") && strings.HasPrefix(r.Message, "failed to join") {
			fromMemberlist++ // memberlist's "[DEBUG] memberlist: ..." lines arrive via slog
		}
	}
	if fromMemberlist == 0 {
		t.Errorf("no memberlist log line routed to slog")
	}
	// Attempts at ~0, 0.25s, 0.75s: three failed rounds logged before the deadline.
	if rounds < 2 {
		t.Errorf("logged %d failed join rounds naming %s; want at least 2", rounds, dead)
	}
}

func TestJoinRejectsBadAddress(t *testing.T) {
	t.Parallel()
	g := startNode(t, "g")
	for _, addrs := range [][]string{nil, {"host:0"}, {"a:b:c"}} {
		if err := g.Join(t.Context(), addrs); err == nil || !strings.HasPrefix(err.Error(), "join") {
			t.Errorf("Join(%q) = %v; want an error", addrs, err)
		}
	}
}

// A second node that takes an existing live node's name must learn it on
// join (memberlist calls NotifyConflict on the joiner when the pushed state
// has an alive entry for its own name at another address).
func TestJoinDetectsNameConflict(t *testing.T) {
	t.Parallel()
	orig := startNode(t, "dup")
	other := startNode(t, "other")
	join(t, other, orig)
	waitFor(t, 5*time.Second, "other sees dup", func() bool { return aliveNames(other) == "dup,other" })

	imposter := startNode(t, "dup")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err := imposter.Join(ctx, []string{other.LocalAddr()})
	if !errors.Is(err, ErrNameConflict) {
		t.Fatalf("Join with a duplicate name = %v; want ErrNameConflict", err)
	}
	if !strings.Contains(err.Error(), orig.LocalAddr()) {
		t.Errorf("conflict error %q does not name the other address %s", err, orig.LocalAddr())
	}
}

func TestEncryptionKey(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{1}, 32)
	other := bytes.Repeat([]byte{2}, 32)
	a := startNode(t, "a", withKey(key))
	b := startNode(t, "b", withKey(key))
	join(t, b, a)
	waitFor(t, 5*time.Second, "a sees b", func() bool { return aliveNames(a) == "a,b" })

	for _, tt := range []struct {
		name string
		key  []byte
	}{{"wrong-key", other}, {"no-key", nil}} {
		c := startNode(t, tt.name, withKey(tt.key))
		ctx, cancel := context.WithTimeout(t.Context(), 800*time.Millisecond)
		err := c.Join(ctx, []string{a.LocalAddr()})
		cancel()
		if err == nil {
			t.Errorf("%s joined an encrypted cluster", tt.name)
		}
		if got := aliveNames(a); got != "a,b" {
			t.Errorf("after %s tried to join, a sees %s; want a,b", tt.name, got)
		}
	}

	if _, err := New(Config{Name: "bad", BindAddr: "127.0.0.1", Keys: [][]byte{[]byte("short")}, Logger: quietLogger()}); err == nil ||
		!strings.Contains(err.Error(), "want 16, 24 or 32") {
		t.Errorf("New with a 5-byte key = %v; want a key-size error", err)
	}
}

func TestShutdownIdempotentAndClosesEvents(t *testing.T) {
	t.Parallel()
	g := startNode(t, "solo")
	if ev := <-g.Events(); ev.Kind != EventJoin || ev.Member.Name != "solo" {
		t.Errorf("first event = %+v; want our own join", ev)
	}
	for i := range 2 {
		if err := g.Shutdown(); err != nil {
			t.Fatalf("Shutdown #%d: %v", i+1, err)
		}
	}
	select {
	case _, ok := <-g.Events():
		if ok {
			t.Fatal("event after Shutdown; want channel closed")
		}
	case <-time.After(time.Second):
		t.Fatal("Events not closed by Shutdown")
	}
	if err := g.Leave(t.Context()); !errors.Is(err, ErrShutdown) {
		t.Errorf("Leave after Shutdown = %v; want ErrShutdown", err)
	}
	if err := g.UpdateMeta(t.Context(), Meta{}); !errors.Is(err, ErrShutdown) {
		t.Errorf("UpdateMeta after Shutdown = %v; want ErrShutdown", err)
	}
	if err := g.Join(t.Context(), []string{"127.0.0.1:1"}); !errors.Is(err, ErrShutdown) {
		t.Errorf("Join after Shutdown = %v; want ErrShutdown", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no name", Config{}, "Name is required"},
		{"bad port", Config{Name: "x", BindPort: 70000}, "ports must be in 0..65535"},
		{"bad meta", Config{Name: "x", Meta: Meta{CPUs: -1}}, "CPUs is -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Logger = quietLogger()
			if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New(%+v) = %v; want error containing %q", tt.cfg, err, tt.want)
			}
		})
	}
}

// Events must never block memberlist: overflow is dropped and counted.
func TestEventOverflowDropsAndCounts(t *testing.T) {
	t.Parallel()
	g := startNode(t, "busy")
	d := &delegate{g: g}
	meta, err := Meta{GPUs: 2}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	const extra = 10
	done := make(chan struct{})
	go func() { // owned by this test; finishes after a bounded number of calls
		defer close(done)
		for i := range EventBuffer + extra {
			d.NotifyUpdate(&memberlist.Node{Name: fmt.Sprintf("p%d", i), Addr: net.IPv4(127, 0, 0, 1), Port: 1, Meta: meta})
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("delegate blocked on a full event buffer")
	}
	// The buffer already held our own join event.
	if got := g.Dropped(); got != extra+1 {
		t.Errorf("Dropped() = %d; want %d", got, extra+1)
	}
}

// A member whose metadata cannot be decoded is shown with zero Meta.
func TestUndecodableMetaShownAsZero(t *testing.T) {
	t.Parallel()
	h := newRecordHandler()
	g := startNode(t, "me", withLogger(slog.New(h)))
	d := &delegate{g: g}
	d.NotifyJoin(&memberlist.Node{Name: "garbled", Addr: net.IPv4(127, 0, 0, 2), Port: 7072, Meta: []byte{0xc1, 0xff}})
	m, ok := member(g, "garbled")
	if !ok || m.Status != StatusAlive || m.Meta != (Meta{}) || m.Addr != "127.0.0.2:7072" {
		t.Fatalf("Members() has garbled = %+v, %v; want alive at 127.0.0.2:7072 with zero meta", m, ok)
	}
	var warned bool
	for _, r := range h.all() {
		warned = warned || (r.Level == slog.LevelWarn && strings.Contains(r.Message, "undecodable") && strings.Contains(r.Attrs, "node=garbled"))
	}
	if !warned {
		t.Errorf("no warning logged for undecodable meta; records: %+v", h.all())
	}
}

func TestEventKindString(t *testing.T) {
	for k, want := range map[EventKind]string{EventJoin: "join", EventLeave: "leave", EventFail: "fail", EventUpdate: "update", 0: "unknown(0)"} {
		if got := k.String(); got != want {
			t.Errorf("EventKind(%d).String() = %q; want %q", int(k), got, want)
		}
	}
}

// TestKeyRotation: members move from one key to another in three steps
// (install, use, remove) without losing each other; afterwards a node with
// only the old key cannot join, and one with only the new key can.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	a := startNode(t, "a", withKey(k1))
	b := startNode(t, "b", withKey(k1))
	join(t, b, a)
	waitFor(t, 5*time.Second, "a sees b", func() bool { return aliveNames(a) == "a,b" })
	for _, step := range [][][]byte{{k1, k2}, {k2, k1}, {k2}} {
		for _, g := range []*Gossip{a, b} {
			if err := g.SetKeys(step); err != nil {
				t.Fatalf("SetKeys: %v", err)
			}
		}
		time.Sleep(300 * time.Millisecond) // a few probe rounds on each key set
		if got := aliveNames(a); got != "a,b" {
			t.Fatalf("after SetKeys(%d keys), a sees %s; want a,b", len(step), got)
		}
	}
	if got := a.Keys(); len(got) != 1 || !bytes.Equal(got[0], k2) {
		t.Errorf("Keys() = %x; want only k2", got)
	}
	old := startNode(t, "old", withKey(k1))
	ctx, cancel := context.WithTimeout(t.Context(), 800*time.Millisecond)
	err := old.Join(ctx, []string{a.LocalAddr()})
	cancel()
	if err == nil {
		t.Errorf("a node with the removed key joined")
	}
	fresh := startNode(t, "fresh", withKey(k2))
	join(t, fresh, a)
	waitFor(t, 5*time.Second, "a sees fresh", func() bool { return aliveNames(a) == "a,b,fresh" })
	if err := startNode(t, "plain").SetKeys([][]byte{k2}); err == nil {
		t.Errorf("SetKeys on an unencrypted node succeeded")
	}
}

// TestMemberTable: the member table Members, Member and NumMembers read
// follows every event, with the alive count (the broadcast queue's
// size) kept by each event rather than counted over the table, and the
// sorted list rebuilt only after a change; a failed member keeps its
// metadata and is forgotten reapAfter after it failed.
func TestMemberTable(t *testing.T) {
	g := &Gossip{log: slog.New(slog.DiscardHandler), name: "a", reapAfter: time.Hour,
		events: make(chan Event, 16), members: map[string]*memberEntry{}, lost: map[string]*lostMember{}, leaving: map[string]time.Time{}}
	meta, err := Meta{APIAddr: "127.0.0.1:7070", GPUs: 8}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string) *memberlist.Node {
		return &memberlist.Node{Name: name, Addr: net.IPv4(127, 0, 0, 1), Port: 7072, Meta: meta}
	}
	names := func() []string {
		var out []string
		for _, m := range g.Members() {
			out = append(out, m.Name+":"+string(m.Status))
		}
		return out
	}
	steps := []struct {
		kind  EventKind
		node  string
		st    MemberStatus
		alive int32
		want  []string
	}{
		{EventJoin, "c", StatusAlive, 1, []string{"c:alive"}},
		{EventJoin, "a", StatusAlive, 2, []string{"a:alive", "c:alive"}},
		{EventJoin, "b", StatusAlive, 3, []string{"a:alive", "b:alive", "c:alive"}},
		{EventUpdate, "b", StatusAlive, 3, []string{"a:alive", "b:alive", "c:alive"}},
		{EventFail, "c", StatusFailed, 2, []string{"a:alive", "b:alive", "c:failed"}},
		{EventFail, "c", StatusFailed, 2, []string{"a:alive", "b:alive", "c:failed"}},
		{EventJoin, "c", StatusAlive, 3, []string{"a:alive", "b:alive", "c:alive"}},
		{EventLeave, "b", StatusLeft, 2, []string{"a:alive", "b:left", "c:alive"}},
	}
	for i, s := range steps {
		n := node(s.node)
		if s.st != StatusAlive {
			n.Meta = nil // memberlist may announce a departure without metadata
		}
		g.record(s.kind, n, s.st)
		if got := names(); !slices.Equal(got, s.want) || g.numAlive.Load() != s.alive || g.NumMembers() != len(s.want) {
			t.Errorf("step %d (%s %s): members %v, %d alive, NumMembers %d; want %v, %d alive", i, s.kind, s.node, got, g.numAlive.Load(), g.NumMembers(), s.want, s.alive)
		}
		if m, ok := g.Member(s.node); !ok || m.Status != s.st || m.Meta.GPUs != 8 {
			t.Errorf("step %d: Member(%s) = %+v, %v; want %s with its metadata", i, s.node, m, ok, s.st)
		}
	}
	g.mu.Lock()
	g.reapLocked(time.Now().Add(2 * time.Hour))
	g.mu.Unlock()
	if got := names(); !slices.Equal(got, []string{"a:alive", "c:alive"}) {
		t.Errorf("after reapAfter: members %v; want the left member forgotten", got)
	}
	if _, ok := g.Member("b"); ok || g.NumMembers() != 2 {
		t.Errorf("after reapAfter: Member(b) found or NumMembers %d; want forgotten, 2", g.NumMembers())
	}
	list := g.Members()
	list[0].Name = "mutated"
	if again := g.Members(); again[0].Name != "a" {
		t.Errorf("a caller's change to Members' answer reached the table: %v", again[0].Name)
	}
}
