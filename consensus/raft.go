package consensus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/shoal-sched/shoal/fsm"
)

const (
	// boltOpenTimeout bounds the wait for raft.db's file lock: a second
	// agent on the same data directory fails fast instead of hanging.
	boltOpenTimeout = 2 * time.Second
	// retainSnapshots is how many snapshots stay on disk: the newest, and
	// one more in case the newest turns out unreadable.
	retainSnapshots = 2
	// logCacheSize is how many recent entries are kept in memory, so
	// replication to followers rarely reads bbolt.
	logCacheSize = 512
	// transportMaxPool is how many idle connections are kept per peer.
	transportMaxPool = 3
	// transportTimeout bounds each RPC's I/O (scaled up for snapshots).
	transportTimeout = 10 * time.Second
	// notifyBuffer is the depth of raft's NotifyCh. The forwarder drains it
	// continuously; the buffer only absorbs scheduling delay.
	notifyBuffer = 8
	// observeBuffer is the depth of the observer's channel: leader changes
	// and, during an election, the vote requests each voter receives. An
	// observation finding it full is dropped (raft counts it).
	observeBuffer = 32
	// shutdownWaitTimeout bounds how long Shutdown waits for goroutines
	// waiting on raft futures, which raft resolves when it shuts down.
	shutdownWaitTimeout = 5 * time.Second
)

// Suffrage is a server's role in the raft configuration.
type Suffrage string

const (
	Voter    Suffrage = "voter"    // votes and counts toward quorum
	Nonvoter Suffrage = "nonvoter" // replicates the log, never votes
)

func (s Suffrage) raft() (raft.ServerSuffrage, error) {
	switch s {
	case Voter:
		return raft.Voter, nil
	case Nonvoter:
		return raft.Nonvoter, nil
	}
	return 0, fmt.Errorf("suffrage %q: want %q or %q", s, Voter, Nonvoter)
}

func suffrageOf(s raft.ServerSuffrage) Suffrage {
	switch s {
	case raft.Voter:
		return Voter
	case raft.Nonvoter:
		return Nonvoter
	}
	return Suffrage(s.String()) // raft's "Staging", unused by raft today
}

// Server is one member of the raft configuration.
type Server struct {
	ID       string
	Addr     string
	Suffrage Suffrage
}

// Raft is one server of the cluster's raft group. It is safe for
// concurrent use.
type Raft struct {
	raft     *raft.Raft
	store    *raftboltdb.BoltStore
	snaps    *raft.FileSnapshotStore
	trans    *raft.NetworkTransport
	log      *slog.Logger
	id       string
	hasState bool

	leaderCh chan bool // what LeaderCh returns; closed by the forwarder
	// observed carries raft's leader and vote-request observations to the
	// forwarder, which counts leader changes in leaderChanges (Stats) and
	// re-checks a silent leader on a peer's vote request (recheck.go).
	observed      chan raft.Observation
	observer      *raft.Observer
	leaderChanges atomic.Uint64
	stopFwd       chan struct{} // closed by Shutdown to stop the forwarder
	fwdDone       chan struct{} // closed when the forwarder returned

	mu     sync.Mutex
	closed bool           // set by Shutdown; no new waiters after it
	wg     sync.WaitGroup // goroutines waiting on raft futures

	shutdownOnce sync.Once
	shutdownErr  error
}

// Open opens (creating if needed) the raft stores under DataDir/raft,
// starts the transport and the raft server, restoring the newest snapshot
// into cfg.FSM before it returns. A server with no state waits to be
// bootstrapped (Bootstrap) or added by a leader. Open fails at once on a
// done ctx; its own waits are bounded by boltOpenTimeout.
func Open(ctx context.Context, cfg Config) (*Raft, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open raft: %w", err)
	}
	cfg.Timing = cfg.Timing.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	logger := cfg.Logger.With("component", "raft", "node", cfg.ID)
	hl := newHclogAdapter(logger)

	dir := filepath.Join(cfg.DataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create raft directory %s: %w", dir, err)
	}
	dbPath := filepath.Join(dir, "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{
		Path: dbPath,
		// NoFreelistSync: a commit (one per group of appended entries)
		// no longer rewrites the free-page list, which at this file's
		// churn (entries appended, old ones deleted behind snapshots) is
		// a page or more per commit; bolt rebuilds the list by scanning
		// the file when it opens it, which for raft.db (about
		// TrailingLogs entries) is milliseconds. etcd runs bolt this way.
		// The file stays readable by a bolt that syncs the list.
		BoltOptions: &bbolt.Options{Timeout: boltOpenTimeout, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		return nil, fmt.Errorf("open raft store %s: %w", dbPath, err)
	}
	closeStore := func() {
		if err := store.Close(); err != nil {
			logger.Error("close raft store after failed open", "path", dbPath, "err", err)
		}
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, retainSnapshots, hl.Named("snapshot"))
	if err != nil {
		closeStore()
		return nil, fmt.Errorf("open snapshot store %s: %w", filepath.Join(dir, "snapshots"), err)
	}
	logs, err := raft.NewLogCache(logCacheSize, store)
	if err != nil {
		closeStore()
		return nil, fmt.Errorf("create raft log cache: %w", err)
	}
	hasState, err := raft.HasExistingState(logs, store, snaps)
	if err != nil {
		closeStore()
		return nil, fmt.Errorf("read raft state in %s: %w", dir, err)
	}

	trans, err := newTransport(cfg, hl.Named("transport"))
	if err != nil {
		closeStore()
		return nil, err
	}

	notify := make(chan bool, notifyBuffer)
	adapter := &fsmAdapter{state: cfg.FSM, log: logger}
	rn, err := raft.NewRaft(cfg.raftConfig(hl, notify), adapter, logs, store, snaps, trans)
	if err != nil {
		if cerr := trans.Close(); cerr != nil {
			logger.Error("close raft transport after failed open", "err", cerr)
		}
		closeStore()
		return nil, fmt.Errorf("start raft server %s: %w", cfg.ID, err)
	}
	adapter.raft.Store(rn)

	r := &Raft{
		raft:     rn,
		store:    store,
		snaps:    snaps,
		trans:    trans,
		log:      logger,
		id:       cfg.ID,
		hasState: hasState,
		leaderCh: make(chan bool),
		stopFwd:  make(chan struct{}),
		fwdDone:  make(chan struct{}),
		observed: make(chan raft.Observation, observeBuffer),
	}
	// Non-blocking: an observation the forwarder has no room for is
	// dropped (and counted by raft) rather than holding raft up.
	r.observer = raft.NewObserver(r.observed, false, observed)
	rn.RegisterObserver(r.observer)
	// The forwarder is owned by r: Shutdown closes stopFwd and waits on
	// fwdDone.
	go r.forwardLeadership(notify)
	logger.Info("raft opened", "addr", r.Addr(), "dir", dir, "has_state", hasState)
	return r, nil
}

// newTransport binds the raft transport: plain TCP, or cfg.StreamLayer.
func newTransport(cfg Config, hl hclog.Logger) (*raft.NetworkTransport, error) {
	tc := &raft.NetworkTransportConfig{
		Logger:  hl,
		MaxPool: transportMaxPool,
		Timeout: transportTimeout,
	}
	if cfg.StreamLayer != nil {
		tc.Stream = cfg.StreamLayer
		return raft.NewNetworkTransportWithConfig(tc), nil
	}
	var advertise net.Addr
	if cfg.AdvertiseAddr != "" {
		a, err := net.ResolveTCPAddr("tcp", cfg.AdvertiseAddr)
		if err != nil {
			return nil, fmt.Errorf("resolve raft advertise address %s: %w", cfg.AdvertiseAddr, err)
		}
		advertise = a
	}
	trans, err := raft.NewTCPTransportWithConfig(cfg.BindAddr, advertise, tc)
	if err != nil {
		return nil, fmt.Errorf("raft transport on %s (advertise %q): %w", cfg.BindAddr, cfg.AdvertiseAddr, err)
	}
	return trans, nil
}

// leaderBacklog bounds the leadership changes queued for a slow LeaderCh
// reader; beyond it the queue collapses to the latest value (see doc.go).
const leaderBacklog = 16

// forwardLeadership moves raft's leadership notifications to leaderCh in
// order, never blocking raft for longer than a channel receive, counts
// the leader changes raft observes, and re-checks a silent leader when a
// peer asks for a vote (recheck.go).
func (r *Raft) forwardLeadership(in <-chan bool) {
	defer close(r.fwdDone)
	defer close(r.leaderCh)
	var pending []bool
	recheck := time.NewTimer(0)
	<-recheck.C
	defer recheck.Stop()
	var recheckC <-chan time.Time // recheck.C while a re-check is due
	for {
		var out chan<- bool
		var next bool
		if len(pending) > 0 {
			out, next = r.leaderCh, pending[0]
		}
		select {
		case v := <-in:
			if len(pending) >= leaderBacklog {
				r.log.Warn("leadership changes coalesced: LeaderCh reader is slow", "dropped", len(pending))
				pending = pending[:0]
			}
			pending = append(pending, v)
		case out <- next:
			pending = pending[1:]
		case o := <-r.observed:
			r.countLeader(o)
			if recheckC != nil {
				break // one pending re-check covers every request
			}
			if at, ok := recheckAt(r.recheckView(), voteCandidate(o)); ok {
				recheck.Reset(max(time.Until(at), 0))
				recheckC = recheck.C
			}
		case now := <-recheckC:
			recheckC = nil
			if v := r.recheckView(); recheckDue(v, now) {
				r.log.Info("a peer asks for a vote and the leader has been silent for the heartbeat timeout: re-checking now",
					"leader", v.Leader, "silent", now.Sub(v.LastContact).Round(time.Millisecond))
				r.recheckLeader()
			}
		case <-r.stopFwd:
			return
		}
	}
}

// HasState reports whether raft had existing state (log entries, a
// snapshot or a term) when Open ran.
func (r *Raft) HasState() bool { return r.hasState }

// Addr returns the address other servers dial to reach this one.
func (r *Raft) Addr() string { return string(r.trans.LocalAddr()) }

// Bootstrap writes the initial configuration. It is refused with
// ErrAlreadyBootstrapped when the server has state. Every server in a new
// cluster may bootstrap with the same list; the list must include this
// server as a voter.
func (r *Raft) Bootstrap(servers []Server) error {
	if r.hasState {
		return fmt.Errorf("bootstrap %s: %w", r.id, ErrAlreadyBootstrapped)
	}
	conf, err := r.configuration(servers)
	if err != nil {
		return fmt.Errorf("bootstrap %s: %w", r.id, err)
	}
	if err := r.raft.BootstrapCluster(conf).Error(); err != nil {
		if errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("bootstrap %s: %w: %w", r.id, ErrAlreadyBootstrapped, err)
		}
		return fmt.Errorf("bootstrap %s: %w", r.id, r.translate(err))
	}
	r.log.Info("bootstrapped raft", "servers", len(servers))
	return nil
}

func (r *Raft) configuration(servers []Server) (raft.Configuration, error) {
	var conf raft.Configuration
	self := false
	for i, s := range servers {
		if s.ID == "" || s.Addr == "" {
			return conf, fmt.Errorf("server %d (%q at %q): want a non-empty ID and address", i, s.ID, s.Addr)
		}
		suf, err := s.Suffrage.raft()
		if err != nil {
			return conf, fmt.Errorf("server %s: %w", s.ID, err)
		}
		if s.ID == r.id && suf == raft.Voter {
			self = true
		}
		conf.Servers = append(conf.Servers, raft.Server{
			ID: raft.ServerID(s.ID), Address: raft.ServerAddress(s.Addr), Suffrage: suf,
		})
	}
	if !self {
		return conf, fmt.Errorf("servers do not list this server %s as a voter", r.id)
	}
	return conf, nil
}

// timeout returns ctx, bounded by DefaultTimeout when it has no deadline,
// and the time left until its deadline.
func timeout(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
		return ctx, cancel, DefaultTimeout
	}
	dl, _ := ctx.Deadline()
	return ctx, func() {}, max(time.Until(dl), time.Millisecond)
}

// do starts a raft operation with start, given the time left (ctx
// bounded as timeout bounds it), and waits for it; what names it in the
// error.
func (r *Raft) do(ctx context.Context, what string, start func(d time.Duration) raft.Future) error {
	ctx, cancel, d := timeout(ctx)
	defer cancel()
	if err := r.await(ctx, start(d)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// await waits for f or for ctx. The goroutine that blocks on f is tracked
// by r.wg; raft resolves every future by its shutdown at the latest.
func (r *Raft) await(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrShutdown
	}
	r.wg.Go(func() { done <- f.Error() })
	r.mu.Unlock()
	select {
	case err := <-done:
		return r.translate(err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Apply proposes data (an fsm-encoded command) and waits until it is
// committed and applied here, returning the state machine's result and the
// entry's index. It must run on the leader (else ErrNotLeader). When the
// context ends first, or the error wraps raft.ErrLeadershipLost, the entry
// may still commit later.
func (r *Raft) Apply(ctx context.Context, data []byte) (fsm.Result, uint64, error) {
	ctx, cancel, d := timeout(ctx)
	defer cancel()
	f := r.raft.Apply(data, d)
	if err := r.await(ctx, f); err != nil {
		return fsm.Result{}, 0, fmt.Errorf("apply %d-byte command: %w", len(data), err)
	}
	res, ok := f.Response().(fsm.Result)
	if !ok {
		return fsm.Result{}, f.Index(), fmt.Errorf("apply at index %d: state machine returned %T, want fsm.Result", f.Index(), f.Response())
	}
	return res, f.Index(), nil
}

// Barrier waits until every entry committed before it is applied here;
// a new leader calls it before reading its state. Leader only.
func (r *Raft) Barrier(ctx context.Context) error {
	return r.do(ctx, "barrier", func(d time.Duration) raft.Future {
		return r.raft.Barrier(d)
	})
}

// announceWait bounds how long AnnounceCommit waits to hand its barrier
// to raft (its apply channel is buffered: normally no wait at all).
const announceWait = 50 * time.Millisecond

// AnnounceCommit makes the followers learn the commit index now instead
// of with the leader's next entry or after raft's CommitTimeout (a random
// 50 to 100 ms with DefaultTiming): hashicorp/raft's heartbeats do not
// carry the commit index, only AppendEntries do. It proposes a barrier,
// which the leader replicates at once with its commit index, and returns
// without waiting for it. A barrier reaches no state machine
// (CommandsAppliedBy counts around it). Leader only; elsewhere raft
// refuses it, which is of no consequence.
func (r *Raft) AnnounceCommit() {
	_ = r.raft.Barrier(announceWait)
}

// VerifyLeader confirms with a quorum that this server is still the
// leader.
func (r *Raft) VerifyLeader(ctx context.Context) error {
	return r.do(ctx, "verify leader", func(_ time.Duration) raft.Future {
		return r.raft.VerifyLeader()
	})
}

// IsLeader reports whether this server believes it is the leader now.
func (r *Raft) IsLeader() bool { return r.raft.State() == raft.Leader }

// Leader returns the leader this server knows of; both are empty when
// none is known.
func (r *Raft) Leader() (id, addr string) {
	a, i := r.raft.LeaderWithID()
	return string(i), string(a)
}

// LeaderCh delivers true on gaining leadership and false on losing it, in
// order; it is closed by Shutdown. Two equal values in a row mean the
// opposite happened in between (changes coalesced for a slow reader).
func (r *Raft) LeaderCh() <-chan bool { return r.leaderCh }

// Servers returns the latest raft configuration, in its order.
func (r *Raft) Servers(ctx context.Context) ([]Server, error) {
	ctx, cancel, _ := timeout(ctx)
	defer cancel()
	f := r.raft.GetConfiguration()
	if err := r.await(ctx, f); err != nil {
		return nil, fmt.Errorf("read raft configuration: %w", err)
	}
	conf := f.Configuration()
	out := make([]Server, 0, len(conf.Servers))
	for _, s := range conf.Servers {
		out = append(out, Server{ID: string(s.ID), Addr: string(s.Address), Suffrage: suffrageOf(s.Suffrage)})
	}
	return out, nil
}

// AppliedIndex returns the index of the last entry applied to the FSM.
func (r *Raft) AppliedIndex() uint64 { return r.raft.AppliedIndex() }

// LastContact returns when this server last heard from the leader (the
// zero time on the leader itself, or before any contact).
func (r *Raft) LastContact() time.Time { return r.raft.LastContact() }

// State returns raft's state name: "Follower", "Candidate", "Leader" or
// "Shutdown".
func (r *Raft) State() string { return r.raft.State().String() }

// AddVoter adds a server as a voter, or promotes a non-voter. Leader only.
func (r *Raft) AddVoter(ctx context.Context, id, addr string) error {
	return r.do(ctx, fmt.Sprintf("add voter %s at %s", id, addr), func(d time.Duration) raft.Future {
		return r.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, d)
	})
}

// AddNonvoter adds a server that replicates the log without a vote, or
// updates a server's address. Leader only.
func (r *Raft) AddNonvoter(ctx context.Context, id, addr string) error {
	return r.do(ctx, fmt.Sprintf("add nonvoter %s at %s", id, addr), func(d time.Duration) raft.Future {
		return r.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, d)
	})
}

// DemoteVoter takes a voter's vote away; it stays as a non-voter. Leader
// only.
func (r *Raft) DemoteVoter(ctx context.Context, id string) error {
	return r.do(ctx, fmt.Sprintf("demote voter %s", id), func(d time.Duration) raft.Future {
		return r.raft.DemoteVoter(raft.ServerID(id), 0, d)
	})
}

// RemoveServer removes a server from the configuration. Leader only.
func (r *Raft) RemoveServer(ctx context.Context, id string) error {
	return r.do(ctx, fmt.Sprintf("remove server %s", id), func(d time.Duration) raft.Future {
		return r.raft.RemoveServer(raft.ServerID(id), 0, d)
	})
}

// TransferLeadership hands leadership to the most up-to-date voter and
// waits until it took it. Leader only.
func (r *Raft) TransferLeadership(ctx context.Context) error {
	return r.do(ctx, "transfer leadership", func(_ time.Duration) raft.Future {
		return r.raft.LeadershipTransfer()
	})
}

// Shutdown stops raft, the transport and the leadership forwarder, and
// closes the stores. It is idempotent; later calls return the first
// result.
func (r *Raft) Shutdown() error {
	r.shutdownOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()

		var errs []error
		// raft.Shutdown also closes the transport.
		if err := r.raft.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("shut down raft %s: %w", r.id, err))
		}
		// The waiter is owned by this call; it outlives it only if raft
		// failed to resolve a future, which the error below reports.
		waited := make(chan struct{})
		go func() { r.wg.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(shutdownWaitTimeout):
			r.log.Error("raft futures still unresolved after shutdown", "waited", shutdownWaitTimeout)
		}
		r.raft.DeregisterObserver(r.observer)
		close(r.stopFwd)
		<-r.fwdDone
		if err := r.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close raft store: %w", err))
		}
		r.shutdownErr = errors.Join(errs...)
		r.log.Info("raft shut down")
	})
	return r.shutdownErr
}
