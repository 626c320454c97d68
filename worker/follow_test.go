package worker

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"
)

var followNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// TestPickServer: a worker follows a server other than the leader when it
// can, passes over one that just failed, and falls back to the leader,
// then to any live member, which answers with hints (DESIGN "Membership
// and roles": workers follow their allocations from a server).
func TestPickServer(t *testing.T) {
	servers := []Server{{Name: "s1", APIAddr: "s1:7070"}, {Name: "s2", APIAddr: "s2:7070"}}
	alive := []Server{{Name: "w1", APIAddr: "w1:7070"}, {Name: "w2", APIAddr: "w2:7070"}, {Name: "w3"}}
	first := func(int) int { return 0 }
	tests := []struct {
		name  string
		known Known
		alive []Server
		now   time.Time
		want  string
	}{
		{"no servers known: another live member", Known{}, alive, followNow, "w2"},
		{"nobody at all", Known{}, alive[:1], followNow, ""},
		{"a server, not the leader", Known{Leader: "s1", Servers: servers}, alive, followNow, "s2"},
		{"s2 just failed: the leader", Known{Leader: "s1", Servers: servers,
			Failed: map[string]time.Time{"s2": followNow.Add(-time.Second)}}, alive, followNow, "s1"},
		{"after the backoff: s2 again", Known{Leader: "s1", Servers: servers,
			Failed: map[string]time.Time{"s2": followNow.Add(-time.Second)}}, alive, followNow.Add(ServerBackoff), "s2"},
		{"both failed: a live member", Known{Leader: "s1", Servers: servers,
			Failed: map[string]time.Time{"s1": followNow, "s2": followNow}}, alive, followNow, "w2"},
		{"a server without an address is skipped", Known{Servers: []Server{{Name: "s3"}}}, nil, followNow, ""},
		{"no servers known: a member announcing raft first", Known{},
			append(slices.Clone(alive), Server{Name: "r1", APIAddr: "r1:7070", Raft: true}), followNow, "r1"},
		{"a raft member is still passed over for a known server", Known{Servers: servers},
			[]Server{{Name: "r1", APIAddr: "r1:7070", Raft: true}}, followNow, "s2"},
	}
	for _, tt := range tests {
		if got := PickServer("w1", tt.known, tt.alive, tt.now, first); got.Name != tt.want {
			t.Errorf("%s: PickServer = %q; want %q", tt.name, got.Name, tt.want)
		}
	}
}

// TestPickServerSpreads: workers start at different servers.
func TestPickServerSpreads(t *testing.T) {
	var servers []Server
	for _, n := range []string{"s1", "s2", "s3", "s4", "s5"} {
		servers = append(servers, Server{Name: n, APIAddr: n + ":7070"})
	}
	picked := map[string]bool{}
	for _, w := range []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8"} {
		picked[PickServer(w, Known{Servers: servers}, nil, followNow, nil).Name] = true
	}
	if len(picked) < 2 {
		t.Errorf("eight workers all follow %v; want them spread", picked)
	}
}

// TestNextFollowStep: a server reads its replica; a configured server
// without a leader asks for hints only for the grace (an election is not
// a removal), then follows as a worker.
func TestNextFollowStep(t *testing.T) {
	grace := 5 * time.Second
	lost := followNow.Add(-time.Second)
	tests := []struct {
		name                        string
		member, inConfig, following bool
		lostSince                   time.Time
		want                        FollowStep
		wantLost                    time.Time
	}{
		{"a server", true, true, false, lost, StepServe, time.Time{}},
		{"a worker", false, false, false, time.Time{}, StepFollow, time.Time{}},
		{"a worker following", false, false, true, time.Time{}, StepFollow, time.Time{}},
		{"leader just lost", false, true, false, time.Time{}, StepAskLeader, followNow},
		{"within the grace", false, true, false, lost, StepAskLeader, lost},
		{"past the grace", false, true, false, followNow.Add(-grace), StepFollow, followNow.Add(-grace)},
		{"configured but following already", false, true, true, time.Time{}, StepFollow, time.Time{}},
	}
	for _, tt := range tests {
		got, gotLost := NextFollowStep(tt.member, tt.inConfig, tt.following, tt.lostSince, followNow, grace)
		if got != tt.want || !gotLost.Equal(tt.wantLost) {
			t.Errorf("%s: NextFollowStep = %d, %v; want %d, %v", tt.name, got, gotLost, tt.want, tt.wantLost)
		}
	}
}

// TestAfterFollow: a served call is followed at once by the next (it
// blocks on the server); a node that failed or is no server is passed
// over, unless only hints were asked of it.
func TestAfterFollow(t *testing.T) {
	tests := []struct {
		outcome   FollowOutcome
		hintsOnly bool
		pause     time.Duration
		passOver  bool
	}{
		{OutcomeServed, false, 0, false},
		{OutcomeNoServer, false, followIdle, false},
		{OutcomeNoClient, false, followRetry, false},
		{OutcomeFailed, false, followRetry, true},
		{OutcomeFailed, true, followRetry, true},
		{OutcomeHints, false, followRetry, true},
		{OutcomeHints, true, followRetry, false},
	}
	for _, tt := range tests {
		if pause, pass := AfterFollow(tt.outcome, tt.hintsOnly); pause != tt.pause || pass != tt.passOver {
			t.Errorf("AfterFollow(%d, %v) = %v, %v; want %v, %v", tt.outcome, tt.hintsOnly, pause, pass, tt.pause, tt.passOver)
		}
	}
}

// fakeUpstream answers follow calls with outcome and records the rest.
type fakeUpstream struct {
	known     Known
	alive     []Server
	listed    int // calls of Alive
	outcome   FollowOutcome
	asked     []string
	passed    []string
	dropped   int
	behind    int
	following bool
}

func (u *fakeUpstream) Following() bool { return u.following }
func (u *fakeUpstream) Drop()           { u.dropped++ }
func (u *fakeUpstream) Behind()         { u.behind++ }
func (u *fakeUpstream) Known() Known    { return u.known }
func (u *fakeUpstream) Alive() []Server { u.listed++; return u.alive }
func (u *fakeUpstream) Follow(_ context.Context, s Server, _ bool) (FollowOutcome, error) {
	u.asked = append(u.asked, s.Name)
	if u.outcome == OutcomeFailed {
		return u.outcome, errors.New("refused")
	}
	return u.outcome, nil
}
func (u *fakeUpstream) PassOver(name string, _ time.Time) { u.passed = append(u.passed, name) }

// TestFollowerOnce: a node that fails a call is passed over; one that
// serves is asked again.
func TestFollowerOnce(t *testing.T) {
	u := &fakeUpstream{known: Known{Servers: []Server{{Name: "s1", APIAddr: "s1:7070"}}}, outcome: OutcomeFailed}
	f := Follower{Self: "w1", Upstream: u, Clock: waitNClock{now: followNow}, Log: slog.New(slog.DiscardHandler)}
	if pause, err := f.Once(context.Background(), false); err == nil || pause != followRetry || len(u.passed) != 1 {
		t.Errorf("failed call: pause %v, err %v, passed over %v; want %v, an error, s1", pause, err, u.passed, followRetry)
	}
	u.outcome, u.passed = OutcomeServed, nil
	if pause, err := f.Once(context.Background(), false); err != nil || pause != 0 || len(u.passed) != 0 {
		t.Errorf("served: pause %v, err %v, passed over %v; want 0, none, none", pause, err, u.passed)
	}
	if u.listed != 0 {
		t.Errorf("a server was known, yet the live members were listed %d times; want 0", u.listed)
	}
	u.known = Known{}
	if _, err := f.Once(context.Background(), false); !errors.Is(err, ErrNoServer) || u.listed != 1 {
		t.Errorf("nobody to ask: err %v, members listed %d times; want ErrNoServer, once", err, u.listed)
	}
	u.alive, u.asked = []Server{{Name: "w2", APIAddr: "w2:7070"}}, nil
	f.Roll = func(int) int { return 0 }
	if _, err := f.Once(context.Background(), false); err != nil || !slices.Equal(u.asked, []string{"w2"}) {
		t.Errorf("no server known: err %v, asked %v; want none, w2", err, u.asked)
	}
}

type fakeMembership struct{ member, inConfig bool }

func (m fakeMembership) Member(context.Context) (bool, bool) { return m.member, m.inConfig }

// waitNClock is a Timer stopped at now whose waits end at once; cancel,
// when set, ends the test's context at the nth wait.
type waitNClock struct {
	now    time.Time
	waits  *int
	n      int
	cancel context.CancelFunc
}

func (c waitNClock) Now() time.Time { return c.now }
func (c waitNClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.now
	if c.waits != nil {
		if *c.waits++; *c.waits >= c.n {
			c.cancel()
		}
	}
	return ch
}

// TestFollowerRun: a server drops any remote view each round; a worker
// marks its replica behind and follows.
func TestFollowerRun(t *testing.T) {
	run := func(m fakeMembership) *fakeUpstream {
		u := &fakeUpstream{known: Known{Servers: []Server{{Name: "s1", APIAddr: "s1:7070"}}}, outcome: OutcomeServed}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		waits := 0
		Follower{Self: "w1", Membership: m, Upstream: u, Log: slog.New(slog.DiscardHandler), Grace: time.Second,
			Clock: waitNClock{now: followNow, waits: &waits, n: 3, cancel: cancel}}.Run(ctx)
		return u
	}
	if u := run(fakeMembership{member: true, inConfig: true}); u.dropped != 3 || len(u.asked) != 0 {
		t.Errorf("server: dropped %d, asked %v; want 3 drops, nobody asked", u.dropped, u.asked)
	}
	if u := run(fakeMembership{}); u.behind != 3 || len(u.asked) != 3 || u.dropped != 0 {
		t.Errorf("worker: behind %d, asked %v, dropped %d; want 3, s1 thrice, 0", u.behind, u.asked, u.dropped)
	}
}
