package gossip

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// DefaultPort is the gossip port a join address without a port gets.
const DefaultPort = 7072

// Bounds on waiting. Every wait in this package is bounded by one of these
// or by the caller's context.
const (
	// EventBuffer is the capacity of the Events channel.
	EventBuffer = 256

	joinBackoffStart = 250 * time.Millisecond
	joinBackoffMax   = 5 * time.Second
	// broadcastTimeout caps how long Leave and UpdateMeta wait for their
	// message to go out when ctx has no earlier deadline.
	broadcastTimeout = 10 * time.Second
	// leaveIntentTTL is how long a received leave intent explains a
	// departure; a leaving node calls memberlist's Leave well within it.
	leaveIntentTTL = 3 * broadcastTimeout
)

var (
	// ErrNameConflict means another live member already uses our name at
	// a different address.
	ErrNameConflict = errors.New("node name already in use")
	// ErrShutdown is returned by calls made after Shutdown.
	ErrShutdown = errors.New("gossip is shut down")
)

// MemberStatus is what this node believes about a member.
type MemberStatus string

const (
	StatusAlive MemberStatus = "alive"
	// StatusSuspect is reserved: memberlist v0.5.4 has no race-free way
	// to observe suspicion, so Members reports suspect nodes as alive
	// until they are declared failed.
	StatusSuspect MemberStatus = "suspect"
	StatusFailed  MemberStatus = "failed"
	StatusLeft    MemberStatus = "left"
)

// Member is one node as gossip knows it.
type Member struct {
	Name   string
	Addr   string // gossip host:port
	Meta   Meta   // zero if the node's metadata could not be decoded
	Status MemberStatus
}

// EventKind says what happened to a member.
type EventKind int

const (
	EventJoin   EventKind = iota + 1 // a node became alive (including this node, first)
	EventLeave                       // a node left gracefully
	EventFail                        // a node was declared failed
	EventUpdate                      // a node's metadata changed
)

func (k EventKind) String() string {
	switch k {
	case EventJoin:
		return "join"
	case EventLeave:
		return "leave"
	case EventFail:
		return "fail"
	case EventUpdate:
		return "update"
	default:
		return "unknown(" + strconv.Itoa(int(k)) + ")"
	}
}

// Event is one membership change.
type Event struct {
	Kind   EventKind
	Member Member
}

// Config configures New.
type Config struct {
	Name string // node name, unique in the cluster; required

	BindAddr string // default 0.0.0.0
	BindPort int    // 0 picks a free port (tests); the agent passes DefaultPort
	// AdvertiseAddr and AdvertisePort are what other nodes dial; they
	// default to the bind address and port.
	AdvertiseAddr string
	AdvertisePort int

	Meta Meta

	// Keys, if set, encrypt and authenticate all gossip (16, 24 or 32
	// bytes each, AES-128/192/256): messages go out with the first (the
	// primary) and are accepted with any. Nodes that share no key cannot
	// talk. SetKeys changes them while running (rotation).
	Keys [][]byte

	Logger *slog.Logger // default slog.Default()

	// Overrides of memberlist.DefaultLANConfig for faster failure
	// detection (tests). Zero keeps the LAN default. Setting ProbeInterval
	// below the default probe timeout also shortens the probe timeout to
	// half the interval.
	ProbeInterval time.Duration
	SuspicionMult int

	// ReconnectInterval is how often failed members are dialled again
	// (default DefaultReconnectInterval); ReconnectTimeout is how long
	// they are (default DefaultReconnectTimeout).
	ReconnectInterval time.Duration
	ReconnectTimeout  time.Duration
}

// Gossip is a running memberlist instance with Shoal's metadata.
type Gossip struct {
	// keyring is memberlist's, nil when unencrypted.
	keyring   *memberlist.Keyring
	log       *slog.Logger
	ml        *memberlist.Memberlist
	name      string
	addr      string
	reapAfter time.Duration // memberlist's GossipToTheDeadTime

	events  chan Event
	dropped atomic.Uint64
	// probeFailures counts probes of this node that got no ack.
	probeFailures atomic.Uint64
	done          chan struct{} // closed by Shutdown
	numAlive      atomic.Int32  // alive members, for the broadcast queue
	bcast         *memberlist.TransmitLimitedQueue

	// life orders Leave/UpdateMeta (read side) against Shutdown (write
	// side): memberlist panics on Leave after Shutdown.
	life     sync.RWMutex
	shutdown bool // guarded by life

	// mu guards the fields below. memberlist calls our delegates while it
	// holds its own node lock, so code holding mu must never call into
	// memberlist (lock order: memberlist's lock, then mu).
	mu      sync.Mutex
	meta    []byte
	members map[string]*memberEntry
	// sorted is members as Members returns them (by name), rebuilt only
	// after a change: nil when stale. reapAt is when the first failed or
	// left member is due to be forgotten (zero: none is). Callers such as
	// a worker's follow loop ask for the member list far more often than
	// it changes, and in a forming cluster of N nodes each node sees N
	// joins: sorting, or counting the alive members, on every call or
	// event made that O(N²) per node (BENCHMARKS.md, "Toward 1,000
	// agents").
	sorted   []Member
	reapAt   time.Time
	leaving  map[string]time.Time   // leave intents by node, with when we heard them
	closed   bool                   // events channel closed
	conflict string                 // address of a node using our name, seen since the last Join began
	lost     map[string]*lostMember // failed members to dial again, by name

	reconnectDone chan struct{} // closed when reconnectLoop returns
}

type memberEntry struct {
	m     Member
	since time.Time // when it became failed or left
	// raw is the metadata m.Meta was decoded from: an event that brings
	// the same bytes again (a rejoin, a refuted suspicion) is not decoded
	// again.
	raw []byte
}

// New creates the memberlist instance: it is bound and listening when New
// returns, and knows only itself until Join.
func New(cfg Config) (*Gossip, error) {
	if cfg.Name == "" {
		return nil, errors.New("new gossip: config Name is required")
	}
	if cfg.BindPort < 0 || cfg.BindPort > 65535 || cfg.AdvertisePort < 0 || cfg.AdvertisePort > 65535 {
		return nil, fmt.Errorf("new gossip %q: ports must be in 0..65535 (bind %d, advertise %d)", cfg.Name, cfg.BindPort, cfg.AdvertisePort)
	}
	for _, k := range cfg.Keys {
		if err := memberlist.ValidateKey(k); err != nil {
			return nil, fmt.Errorf("new gossip %q: secret key of %d bytes: want 16, 24 or 32: %w", cfg.Name, len(k), err)
		}
	}
	meta, err := cfg.Meta.Encode()
	if err != nil {
		return nil, fmt.Errorf("new gossip %q: %w", cfg.Name, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "gossip")

	mc := memberlist.DefaultLANConfig()
	mc.Name = cfg.Name
	if cfg.BindAddr != "" {
		mc.BindAddr = cfg.BindAddr
	}
	mc.BindPort = cfg.BindPort
	mc.AdvertiseAddr = cfg.AdvertiseAddr
	// No LZW on what this node sends: memberlist compresses every packet
	// with a new compress/lzw writer, whose 64 KiB table is allocated per
	// packet. At rest in a 200-agent cluster that was a fifth of every
	// agent's CPU, and most of its garbage collection (BENCHMARKS.md,
	// "1,000 agents"), to save bytes a LAN does not miss. Compressed
	// packets from older agents are still read (memberlist decodes them
	// whatever this setting), so the change is compatible both ways.
	mc.EnableCompression = false
	mc.AdvertisePort = cfg.AdvertisePort
	if mc.AdvertisePort == 0 {
		// memberlist fills it in itself only when BindPort is 0 too.
		mc.AdvertisePort = cfg.BindPort
	}
	if len(cfg.Keys) > 0 {
		ring, err := memberlist.NewKeyring(slices.Clone(cfg.Keys[1:]), slices.Clone(cfg.Keys[0]))
		if err != nil {
			return nil, fmt.Errorf("new gossip %q: keyring: %w", cfg.Name, err)
		}
		mc.Keyring = ring
	}
	if cfg.ProbeInterval > 0 {
		mc.ProbeInterval = cfg.ProbeInterval
		mc.ProbeTimeout = min(mc.ProbeTimeout, cfg.ProbeInterval/2)
	}
	if cfg.SuspicionMult > 0 {
		mc.SuspicionMult = cfg.SuspicionMult
	}
	g := &Gossip{
		log:       logger,
		name:      cfg.Name,
		reapAfter: mc.GossipToTheDeadTime,
		events:    make(chan Event, EventBuffer),
		done:      make(chan struct{}),
		meta:      meta,
		members:   make(map[string]*memberEntry),
		leaving:   make(map[string]time.Time),
		lost:      make(map[string]*lostMember),

		reconnectDone: make(chan struct{}),
	}
	g.bcast = &memberlist.TransmitLimitedQueue{
		NumNodes:       func() int { return int(g.numAlive.Load()) },
		RetransmitMult: mc.RetransmitMult,
	}
	mc.Logger = newStdLogger(logger.With("lib", "memberlist"), &g.probeFailures)
	d := &delegate{g: g}
	mc.Delegate = d
	mc.Events = d
	mc.Conflict = d

	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("new gossip %q on %s:%d: %w", cfg.Name, mc.BindAddr, cfg.BindPort, err)
	}
	g.ml = ml
	// memberlist announced us to ourselves (NotifyJoin) inside Create.
	g.mu.Lock()
	if e, ok := g.members[g.name]; ok {
		g.addr = e.m.Addr
	}
	g.mu.Unlock()
	if g.addr == "" {
		g.addr = ml.LocalNode().Address()
	}
	g.keyring = mc.Keyring
	interval := cmp.Or(cfg.ReconnectInterval, DefaultReconnectInterval)
	go g.reconnectLoop(interval, cmp.Or(cfg.ReconnectTimeout, DefaultReconnectTimeout)) // stopped by Shutdown
	g.log.Info("gossip listening", "node", g.name, "addr", g.addr, "encrypted", len(cfg.Keys) > 0)
	return g, nil
}

// SetKeys makes keys the keyring, the first the primary: new keys are
// installed first, then the primary switched, then the others removed, so
// no message in flight is refused. It fails on an unencrypted instance
// (encryption is chosen at start).
func (g *Gossip) SetKeys(keys [][]byte) error {
	if g.keyring == nil {
		return errors.New("set gossip keys: gossip runs unencrypted")
	}
	if len(keys) == 0 {
		return errors.New("set gossip keys: none given")
	}
	for _, k := range keys {
		if err := g.keyring.AddKey(k); err != nil {
			return fmt.Errorf("set gossip keys: %w", err)
		}
	}
	if err := g.keyring.UseKey(keys[0]); err != nil {
		return fmt.Errorf("set gossip keys: %w", err)
	}
	for _, k := range g.keyring.GetKeys() {
		if !slices.ContainsFunc(keys, func(want []byte) bool { return bytes.Equal(want, k) }) {
			if err := g.keyring.RemoveKey(k); err != nil {
				return fmt.Errorf("set gossip keys: %w", err)
			}
		}
	}
	return nil
}

// Keys returns the keyring, the primary first (nil when unencrypted).
func (g *Gossip) Keys() [][]byte {
	if g.keyring == nil {
		return nil
	}
	primary := g.keyring.GetPrimaryKey()
	out := [][]byte{primary}
	for _, k := range g.keyring.GetKeys() {
		if !bytes.Equal(k, primary) {
			out = append(out, k)
		}
	}
	return out
}

// LocalName is this node's name.
func (g *Gossip) LocalName() string { return g.name }

// LocalAddr is this node's advertised gossip host:port.
func (g *Gossip) LocalAddr() string { return g.addr }

// Events delivers membership changes. The channel is owned by g and closed
// by Shutdown. It is buffered (EventBuffer); when the reader falls behind,
// new events are dropped (counted and logged at warn) rather than block
// memberlist. The first event is this node's own join.
func (g *Gossip) Events() <-chan Event { return g.events }

// ProbeFailures is how many of this node's probes got no ack, direct or
// indirect, since it started (each made it suspect the member).
func (g *Gossip) ProbeFailures() uint64 { return g.probeFailures.Load() }

// HealthScore is memberlist's awareness of this node's own health
// (Lifeguard): 0 when healthy, higher as its probes fail or it has to
// refute suspicions of itself; memberlist slows its probes by it.
func (g *Gossip) HealthScore() int { return g.ml.GetHealthScore() }

// Dropped is the number of events dropped because the buffer was full.
func (g *Gossip) Dropped() uint64 { return g.dropped.Load() }

// Members returns every member known, this node included, sorted by name.
// Failed and left members are kept with their status until memberlist
// forgets them (its GossipToTheDeadTime after the change).
func (g *Gossip) Members() []Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reapLocked(time.Now())
	if g.sorted == nil {
		g.sorted = make([]Member, 0, len(g.members))
		for _, e := range g.members {
			g.sorted = append(g.sorted, e.m)
		}
		slices.SortFunc(g.sorted, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	}
	return slices.Clone(g.sorted)
}

// Member returns the member named name, as Members would list it.
func (g *Gossip) Member(name string) (Member, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reapLocked(time.Now())
	e, ok := g.members[name]
	if !ok {
		return Member{}, false
	}
	return e.m, true
}

// NumMembers is how many members Members would list.
func (g *Gossip) NumMembers() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reapLocked(time.Now())
	return len(g.members)
}

// reapLocked forgets the failed and left members older than reapAfter
// at now; the caller holds g.mu.
func (g *Gossip) reapLocked(now time.Time) {
	if g.reapAt.IsZero() || now.Before(g.reapAt) {
		return
	}
	g.reapAt = time.Time{}
	for name, e := range g.members {
		if e.m.Status == StatusAlive {
			continue
		}
		due := e.since.Add(g.reapAfter)
		if now.After(due) {
			delete(g.members, name)
			g.sorted = nil
			continue
		}
		g.noteReap(due)
	}
}

// noteReap makes reapAt no later than due; the caller holds g.mu.
func (g *Gossip) noteReap(due time.Time) {
	if g.reapAt.IsZero() || due.Before(g.reapAt) {
		g.reapAt = due
	}
}

// Join contacts the given members, retrying with exponential backoff
// (250ms doubling to 5s) until at least one answers or ctx ends. An
// address is "host" or "host:port" (IPv6 as "[addr]:port" or a bare
// address); the port defaults to DefaultPort. Each failed round is logged
// with the addresses still awaited.
//
// If, while joining, the cluster reports a live node with our name at a
// different address, Join returns an error wrapping ErrNameConflict; the
// caller should Shutdown and pick another name. A single round can outlast
// ctx by up to memberlist's TCP timeout (10s) when an address blackholes.
func (g *Gossip) Join(ctx context.Context, addrs []string) error {
	if len(addrs) == 0 {
		return errors.New("join: no addresses given")
	}
	targets := make([]string, 0, len(addrs))
	for _, a := range addrs {
		t, err := normalizeJoinAddr(a)
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
		targets = append(targets, t)
	}
	g.mu.Lock()
	g.conflict = ""
	g.mu.Unlock()

	backoff := joinBackoffStart
	var lastErr error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("join %s: gave up after %d attempts (last error: %v): %w", strings.Join(targets, ","), attempt-1, lastErr, err)
		}
		if g.isShutdown() {
			return fmt.Errorf("join: %w", ErrShutdown)
		}
		n, err := g.ml.Join(targets)
		g.mu.Lock()
		other := g.conflict
		g.mu.Unlock()
		if other != "" {
			return fmt.Errorf("join %s: %w: %q is also at %s (we are %s)", strings.Join(targets, ","), ErrNameConflict, g.name, other, g.addr)
		}
		if n > 0 {
			g.log.Info("joined cluster", "node", g.name, "contacted", n, "attempts", attempt)
			return nil
		}
		lastErr = err
		g.log.Warn("join attempt failed; retrying", "node", g.name, "attempt", attempt,
			"waiting_for", targets, "retry_in", backoff, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-g.done:
			t.Stop()
			return fmt.Errorf("join: %w", ErrShutdown)
		case <-t.C:
		}
		backoff = min(2*backoff, joinBackoffMax)
	}
}

// UpdateMeta replaces this node's metadata and gossips it. It waits for
// the update to be broadcast until ctx's deadline (at most 10s).
func (g *Gossip) UpdateMeta(ctx context.Context, m Meta) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("update meta of %q: %w", g.name, err)
	}
	b, err := m.Encode()
	if err != nil {
		return fmt.Errorf("update meta of %q: %w", g.name, err)
	}
	g.life.RLock()
	defer g.life.RUnlock()
	if g.shutdown {
		return fmt.Errorf("update meta of %q: %w", g.name, ErrShutdown)
	}
	g.mu.Lock()
	g.meta = b
	g.mu.Unlock()
	if err := g.ml.UpdateNode(broadcastWait(ctx)); err != nil {
		return fmt.Errorf("update meta of %q: %w", g.name, err)
	}
	return nil
}

// Leave tells the cluster this node is leaving on purpose, so others mark
// it left rather than failed: it gossips a leave intent, waits for it to be
// sent, then has memberlist broadcast its departure. It waits until ctx's
// deadline (at most 10s) in all. Call Shutdown afterwards.
func (g *Gossip) Leave(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("leave %q: %w", g.name, err)
	}
	deadline := time.Now().Add(broadcastWait(ctx))
	g.life.RLock()
	defer g.life.RUnlock()
	if g.shutdown {
		return fmt.Errorf("leave %q: %w", g.name, ErrShutdown)
	}
	msg, err := encodeLeaveIntent(g.name)
	if err != nil {
		return fmt.Errorf("leave %q: %w", g.name, err)
	}
	g.mu.Lock()
	g.leaving[g.name] = time.Now()
	g.mu.Unlock()
	if g.numAlive.Load() > 1 {
		sent := make(chan struct{})
		g.bcast.QueueBroadcast(&intentBroadcast{node: g.name, msg: msg, notify: sent})
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-sent:
		case <-t.C:
			g.log.Warn("leave intent not fully sent before deadline; others may report a failure", "node", g.name)
		}
		t.Stop()
	}
	if err := g.ml.Leave(max(time.Until(deadline), time.Millisecond)); err != nil {
		return fmt.Errorf("leave %q: %w", g.name, err)
	}
	g.log.Info("left cluster", "node", g.name)
	return nil
}

// Shutdown stops memberlist without telling anyone (others will declare
// this node failed unless Leave came first) and closes the Events channel.
// It is idempotent.
func (g *Gossip) Shutdown() error {
	g.life.Lock()
	defer g.life.Unlock()
	if g.shutdown {
		return nil
	}
	g.shutdown = true
	close(g.done)
	select {
	case <-g.reconnectDone:
	case <-time.After(reconnectStopWait):
		g.log.Warn("a reconnect dial is still in flight; it ends within memberlist's TCP timeout", "node", g.name)
	}
	err := g.ml.Shutdown()
	g.mu.Lock()
	g.closed = true
	close(g.events)
	g.mu.Unlock()
	if n := g.dropped.Load(); n > 0 {
		g.log.Warn("events were dropped", "node", g.name, "dropped", n)
	}
	if err != nil {
		return fmt.Errorf("shutdown gossip %q: %w", g.name, err)
	}
	return nil
}

func (g *Gossip) isShutdown() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// broadcastWait turns ctx's deadline into memberlist's timeout argument.
func broadcastWait(ctx context.Context) time.Duration {
	d := broadcastTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	// memberlist treats 0 as "wait forever"; never pass it.
	return max(d, time.Millisecond)
}

// normalizeJoinAddr turns "host", "host:port", "[v6]", "[v6]:port" or a
// bare IPv6 address into host:port.
func normalizeJoinAddr(s string) (string, error) {
	const form = `want "host" or "host:port"`
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fmt.Errorf("join address %q: %s", s, form)
	}
	if ip := net.ParseIP(s); ip != nil {
		return net.JoinHostPort(s, strconv.Itoa(DefaultPort)), nil
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host := s[1 : len(s)-1]
		if net.ParseIP(host) == nil {
			return "", fmt.Errorf("join address %q: bracketed host must be an IPv6 address: %s", s, form)
		}
		return net.JoinHostPort(host, strconv.Itoa(DefaultPort)), nil
	}
	if !strings.Contains(s, ":") {
		if strings.ContainsAny(s, "[]/ \t") {
			return "", fmt.Errorf("join address %q: %s", s, form)
		}
		return net.JoinHostPort(s, strconv.Itoa(DefaultPort)), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("join address %q: %s: %w", s, form, err)
	}
	if host == "" || strings.ContainsAny(host, "[]/ \t") {
		return "", fmt.Errorf("join address %q: empty or malformed host: %s", s, form)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("join address %q: port %q: want 1..65535", s, port)
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// delegate receives memberlist's callbacks. memberlist calls the event and
// conflict methods while holding its node lock, from its own goroutines:
// they must be quick, never block and never call back into memberlist.
type delegate struct {
	g *Gossip
}

// NodeMeta implements memberlist.Delegate.
func (d *delegate) NodeMeta(limit int) []byte {
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	if len(d.g.meta) > limit { // Encode guarantees this cannot happen
		d.g.log.Error("node metadata over memberlist's limit; announcing none", "node", d.g.name, "size", len(d.g.meta), "limit", limit)
		return nil
	}
	return slices.Clone(d.g.meta)
}

// NotifyMsg implements memberlist.Delegate: it receives leave intents and
// relays each new one once, so it spreads like memberlist's own messages.
func (d *delegate) NotifyMsg(b []byte) {
	g := d.g
	li, err := decodeMessage(b)
	if err != nil {
		g.log.Warn("dropping undecodable gossip message", "err", err)
		return
	}
	if li.Node == g.name {
		return // our own intent coming back, or a stale one: nothing to learn
	}
	now := time.Now()
	g.mu.Lock()
	heard, ok := g.leaving[li.Node]
	fresh := !ok || now.Sub(heard) > leaveIntentTTL
	if fresh {
		g.leaving[li.Node] = now
	}
	for name, t := range g.leaving { // bound the map: forget stale intents
		if now.Sub(t) > leaveIntentTTL {
			delete(g.leaving, name)
		}
	}
	g.mu.Unlock()
	if fresh {
		g.log.Debug("leave intent", "node", li.Node)
		g.bcast.QueueBroadcast(&intentBroadcast{node: li.Node, msg: slices.Clone(b)})
	}
}

// GetBroadcasts implements memberlist.Delegate.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.g.bcast.GetBroadcasts(overhead, limit)
}

// LocalState and MergeRemoteState implement memberlist.Delegate; Shoal
// exchanges no state of its own in push/pull.
func (d *delegate) LocalState(join bool) []byte            { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool) {}

// NotifyJoin implements memberlist.EventDelegate.
func (d *delegate) NotifyJoin(n *memberlist.Node) {
	d.g.record(EventJoin, n, StatusAlive)
}

// NotifyUpdate implements memberlist.EventDelegate.
func (d *delegate) NotifyUpdate(n *memberlist.Node) {
	d.g.record(EventUpdate, n, StatusAlive)
}

// NotifyLeave implements memberlist.EventDelegate. The departure is a
// leave if we hold a recent leave intent from the node, else a failure.
func (d *delegate) NotifyLeave(n *memberlist.Node) {
	g := d.g
	now := time.Now()
	g.mu.Lock()
	heard, ok := g.leaving[n.Name]
	delete(g.leaving, n.Name)
	g.mu.Unlock()
	if ok && now.Sub(heard) <= leaveIntentTTL {
		g.record(EventLeave, n, StatusLeft)
		return
	}
	g.record(EventFail, n, StatusFailed)
}

// NotifyConflict implements memberlist.ConflictDelegate: memberlist saw an
// alive message for existing.Name from a different address.
func (d *delegate) NotifyConflict(existing, other *memberlist.Node) {
	g := d.g
	if existing.Name != g.name {
		g.log.Warn("two nodes claim one name", "node", existing.Name, "addr", existing.Address(), "other_addr", other.Address())
		return
	}
	g.log.Error("another node uses our name", "node", g.name, "addr", existing.Address(), "other_addr", other.Address())
	g.mu.Lock()
	g.conflict = other.Address()
	g.mu.Unlock()
}

// toMember copies n (owned by memberlist) into a Member, decoding its
// metadata unless old (the entry so far, nil for none) was decoded from
// the same bytes. Undecodable metadata is logged and left zero.
func (g *Gossip) toMember(n *memberlist.Node, st MemberStatus, old *memberEntry) Member {
	m := Member{Name: n.Name, Addr: n.Address(), Status: st}
	if old != nil && len(n.Meta) > 0 && bytes.Equal(old.raw, n.Meta) {
		m.Meta = old.m.Meta
		return m
	}
	if st == StatusAlive || len(n.Meta) > 0 {
		meta, err := DecodeMeta(n.Meta)
		if err != nil {
			if st == StatusAlive {
				g.log.Warn("undecodable node metadata; showing none", "node", n.Name, "addr", m.Addr, "err", err)
			}
		} else {
			m.Meta = meta
		}
	}
	return m
}

// record updates the member table and queues an event without blocking.
// It does O(1) work besides the event (no pass over the members: each
// node records every other node's join).
func (g *Gossip) record(kind EventKind, n *memberlist.Node, st MemberStatus) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, had := g.members[n.Name]
	m := g.toMember(n, st, old)
	e := &memberEntry{m: m, raw: slices.Clone(n.Meta)}
	if m.Meta == (Meta{}) {
		e.raw = nil // nothing decoded: decode again next time
	}
	now := time.Now()
	g.noteLost(m, now)
	if m.Status != StatusAlive {
		e.since = now
		if had && m.Meta == (Meta{}) {
			e.m.Meta = old.m.Meta
		}
		g.noteReap(now.Add(g.reapAfter))
	}
	g.members[m.Name] = e
	g.sorted = nil
	g.numAlive.Add(aliveDelta(had && old.m.Status == StatusAlive, m.Status == StatusAlive))
	g.log.Debug("member event", "node", m.Name, "addr", m.Addr, "event", kind.String())
	if g.closed {
		return
	}
	select {
	case g.events <- Event{Kind: kind, Member: e.m}:
	default:
		n := g.dropped.Add(1)
		g.log.Warn("event buffer full; dropping event", "node", m.Name, "event", kind.String(), "dropped", n)
	}
}

// aliveDelta is how a member's change from (was alive) to (is alive)
// moves the count of alive members.
func aliveDelta(was, is bool) int32 {
	switch {
	case is && !was:
		return 1
	case was && !is:
		return -1
	}
	return 0
}
