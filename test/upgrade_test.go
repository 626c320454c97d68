package test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestProtocolGateRollingUpgrade: while one raft voter announces an older
// protocol (the hidden --protocol-version stands in for an older binary),
// the leader refuses to propose a command type that protocol lacks — 409,
// naming the command, the version it needs and the older node — and
// still takes the older types; once that agent restarts announcing this
// build's protocol (its upgrade), the same request is accepted. No replica
// ever diverges (DESIGN invariant 5: replicas agree).
func TestProtocolGateRollingUpgrade(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1})
	a := c.Agents[0]
	createToken := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var tok api.JoinTokenResponse
		_, err := a.Client().Do(ctx, http.MethodPost, "/v1/join-tokens", api.JoinTokenRequest{TTLS: 300}, &tok)
		return err
	}
	// AddJoinToken is a type of protocol 2.
	eventually(t, 30*time.Second, "a join token from an all-new cluster", createToken)

	// Stand in for an older agent: a voter restarts from its data dir
	// announcing protocol 1. Not the leader, and not agents[0]: the seed
	// joins nobody, so after a restart it learns only at the next
	// push/pull (memberlist's 30s) that the others still hold its old
	// metadata, and refutes it only then. One that joins refutes at once.
	old := 1
	if leaderIndex(t, c, 0) == old {
		old = 2
	}
	oldName := c.Agents[old].Name
	base := slices.Clone(c.Agents[old].Args)
	restart := func(args []string) {
		t.Helper()
		if err := c.Kill(old); err != nil {
			t.Fatal(err)
		}
		c.Agents[old].Args = args
		if err := c.Restart(old); err != nil {
			t.Fatal(err)
		}
	}
	restart(append(slices.Clone(base), "--protocol-version", "1"))

	want := fmt.Sprintf("AddJoinToken: command not supported by every server of the cluster: it needs protocol v2; older servers: %s (v1)", oldName)
	eventually(t, 30*time.Second, "join tokens refused while "+oldName+" announces protocol 1", func() error {
		err := createToken()
		var se *api.StatusError
		switch {
		case err == nil:
			return fmt.Errorf("accepted")
		case !errors.As(err, &se) || se.Code != http.StatusConflict || !strings.Contains(se.Message, want):
			return fmt.Errorf("error %v; want 409 containing %q", err, want)
		}
		return nil
	})
	// Types of protocol 1 still go through: the cluster keeps working
	// during the upgrade.
	id := submit(t, a, "--gpus-per-node", "1", "--", "true")
	if j := waitJob(t, a, id, 60*time.Second); j.State != "COMPLETED" {
		t.Fatalf("job %d during the upgrade: %s (%s); want COMPLETED", id, j.State, j.Reason)
	}
	// The refusal reads the same through the CLI.
	if r := shoal(t, a, "join-token", "create"); r.code == 0 || !strings.Contains(r.stderr, want) {
		t.Fatalf("shoal join-token create with %s older: exit %d, stderr %q; want a refusal containing %q", oldName, r.code, r.stderr, want)
	}

	// The upgrade: the agent restarts announcing this build's protocol.
	restart(base)
	eventually(t, 30*time.Second, "join tokens accepted once "+oldName+" is upgraded", createToken)

	for _, ag := range c.Agents {
		var st api.Status
		jsonOf(t, ag, &st, "status")
		if st.Diverged != "" {
			t.Errorf("%s diverged: %s", ag.Name, st.Diverged)
		}
	}
}

// TestOldReplicaStopsOnUnknownCommand: a replica whose log holds a command
// type it does not know (written by a newer agent, which the gate failed
// to see) does not skip it: it stops serving reads and its status says
// which entry and to upgrade it (DESIGN invariant 5, and "never skip a
// committed entry silently"). The entry is planted in the raft log of a
// stopped one-node cluster; on restart the agent commits and applies it.
func TestOldReplicaStopsOnUnknownCommand(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1})
	a := c.Agents[0]
	id := submit(t, a, "--gpus-per-node", "1", "--", "true")
	waitJob(t, a, id, 60*time.Second)
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}

	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(a.DataDir, "raft", "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	last, err := store.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	var prev raft.Log
	if err := store.GetLog(last, &prev); err != nil {
		t.Fatal(err)
	}
	unknown := byte(1) // the next type a newer agent would add: the first this one does not know
	for fsm.CmdType(unknown).Known() {
		unknown++
	}
	if err := store.StoreLog(&raft.Log{Index: last + 1, Term: prev.Term, Type: raft.LogCommand, Data: []byte{unknown, 0x80}}); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("unknown command type %d at index %d: this agent (protocol v%d) is older than the cluster; upgrade it", unknown, last+1, fsm.ProtocolVersion)
	eventually(t, 30*time.Second, "status to report the divergence", func() error {
		var st api.Status
		r := shoal(t, a, "status", "--json")
		if r.code != 0 {
			return fmt.Errorf("status: %s", r.stderr)
		}
		if err := jsonUnmarshal(r.stdout, &st); err != nil {
			return err
		}
		if !strings.Contains(st.Diverged, want) {
			return fmt.Errorf("diverged %q; want it to contain %q", st.Diverged, want)
		}
		return nil
	})
	if r := shoal(t, a, "queue"); r.code == 0 || !strings.Contains(r.stderr, "serves no reads") || !strings.Contains(r.stderr, want) {
		t.Fatalf("shoal queue on a diverged replica: exit %d, stderr %q; want a refusal saying %q", r.code, r.stderr, want)
	}
	// It leads (it is alone) but proposes nothing.
	if r := shoal(t, a, "submit", "--gpus-per-node", "1", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "proposes nothing") || !strings.Contains(r.stderr, want) {
		t.Fatalf("shoal submit on a diverged replica: exit %d, stderr %q; want a refusal saying %q", r.code, r.stderr, want)
	}
}
