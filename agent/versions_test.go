package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
)

// TestProtocolGate: the leader proposes a command type only when every raft
// server alive in gossip announces the protocol that introduced it, so no
// replica meets an entry it cannot apply during a rolling upgrade (DESIGN
// invariant 5: replicas agree).
func TestProtocolGate(t *testing.T) {
	member := func(name string, protocol int, st gossip.MemberStatus) gossip.Member {
		return gossip.Member{Name: name, Status: st, Meta: gossip.Meta{Protocol: protocol}}
	}
	voters := []consensus.Server{{ID: "n1", Suffrage: consensus.Voter}, {ID: "n2", Suffrage: consensus.Voter}, {ID: "n3", Suffrage: consensus.Voter}}
	withReplica := append(append([]consensus.Server{}, voters...), consensus.Server{ID: "n4", Suffrage: consensus.Nonvoter})
	alive := gossip.StatusAlive
	tests := []struct {
		name    string
		t       fsm.CmdType
		members []gossip.Member
		servers []consensus.Server
		want    string // "" = allowed; else a part of the error
	}{
		{"every voter new", fsm.CmdAddJoinToken,
			[]gossip.Member{member("n1", 2, alive), member("n2", 2, alive), member("n3", 2, alive)}, voters, ""},
		{"one voter older", fsm.CmdAddJoinToken,
			[]gossip.Member{member("n1", 2, alive), member("n2", 1, alive), member("n3", 2, alive)}, voters,
			"propose AddJoinToken: command not supported by every server of the cluster: it needs protocol v2; older servers: n2 (v1); upgrade them and retry"},
		{"older ones listed in order", fsm.CmdArchiveJobs,
			[]gossip.Member{member("n3", 1, alive), member("n1", 1, alive), member("n2", 2, alive)}, voters,
			"older servers: n1 (v1), n3 (v1);"},
		{"a replica older", fsm.CmdRevokeUserToken,
			[]gossip.Member{member("n1", 2, alive), member("n2", 2, alive), member("n3", 2, alive), member("n4", 1, alive)}, withReplica,
			"n4 (v1)"},
		{"an older worker outside raft does not count", fsm.CmdRevokeUserToken,
			[]gossip.Member{member("n1", 2, alive), member("n2", 2, alive), member("n3", 2, alive), member("w9", 1, alive)}, voters, ""},
		{"an older server dead in gossip does not count", fsm.CmdSetGossipKeys,
			[]gossip.Member{member("n1", 2, alive), member("n2", 1, gossip.StatusFailed), member("n3", 2, alive)}, voters, ""},
		{"an older server that left does not count", fsm.CmdSetGossipKeys,
			[]gossip.Member{member("n1", 2, alive), member("n2", 1, gossip.StatusLeft), member("n3", 2, alive)}, voters, ""},
		{"a server gossip does not know does not count", fsm.CmdSetGossipKeys,
			[]gossip.Member{member("n1", 2, alive), member("n3", 2, alive)}, voters, ""},
		{"none announced: built before versions, speaks the unannounced protocol", fsm.CmdArchiveJobs,
			[]gossip.Member{member("n1", 0, alive), member("n2", 0, alive), member("n3", 2, alive)}, voters, ""},
		{"oldest protocol's type passes an older cluster", fsm.CmdSubmitJob,
			[]gossip.Member{member("n1", 1, alive), member("n2", 1, alive), member("n3", 1, alive)}, voters, ""},
		{"unknown type refused", fsm.CmdType(200),
			[]gossip.Member{member("n1", 2, alive)}, voters, "this agent does not know the type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := protocolGate(tt.t, tt.members, tt.servers)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("protocolGate(%s) = %v; want nil", tt.t, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, fsm.ErrUnsupportedByCluster)):
				t.Fatalf("protocolGate(%s) = %v; want ErrUnsupportedByCluster containing %q", tt.t, err, tt.want)
			}
		})
	}
}

// TestProtocolGateField: a submit that lays ranks out by -n/-m needs
// protocol 3 even though SubmitJob is older: a v2 replica would drop the
// fields and apply the job differently.
func TestProtocolGateField(t *testing.T) {
	voters := []consensus.Server{{ID: "n1", Suffrage: consensus.Voter}, {ID: "n2", Suffrage: consensus.Voter}}
	members := []gossip.Member{{Name: "n1", Status: gossip.StatusAlive, Meta: gossip.Meta{Protocol: 3}},
		{Name: "n2", Status: gossip.StatusAlive, Meta: gossip.Meta{Protocol: 2}}}
	uneven := fsm.SubmitJob{Spec: cluster.Spec{Request: cluster.Request{Nodes: 2, TasksPerNode: 3, NTasks: 5}}}
	err := protocolGateNeed(fsm.CmdSubmitJob, fsm.Needs(fsm.CmdSubmitJob, uneven), members, voters)
	if err == nil || !errors.Is(err, fsm.ErrUnsupportedByCluster) || !strings.Contains(err.Error(), "needs protocol v3; older servers: n2 (v2)") {
		t.Fatalf("uneven submit to a v2 server: %v; want ErrUnsupportedByCluster naming n2", err)
	}
	plain := fsm.SubmitJob{Spec: cluster.Spec{Request: cluster.Request{Nodes: 2, TasksPerNode: 2}}}
	if err := protocolGateNeed(fsm.CmdSubmitJob, fsm.Needs(fsm.CmdSubmitJob, plain), members, voters); err != nil {
		t.Fatalf("even submit to a v2 server: %v; want nil", err)
	}
}

// TestProtocolGateEvery: the gate on what the leader proposes of itself
// (the archive loop's aging of request ids, protocol 7) counts a server
// gossip does not show alive as speaking nothing, where the gate on a
// user's request passes it over.
func TestProtocolGateEvery(t *testing.T) {
	servers := []consensus.Server{{ID: "n1", Suffrage: consensus.Voter}, {ID: "n2", Suffrage: consensus.Voter}, {ID: "n3", Suffrage: consensus.Voter}}
	aging := fsm.ArchiveJobs{ForgetRequests: true}
	need := fsm.Needs(fsm.CmdArchiveJobs, aging)
	for _, tt := range []struct {
		name       string
		n3         gossip.Member
		user, self string // "" for nil, else a part of the refusal
	}{
		{"every server alive at 7", gossip.Member{Name: "n3", Status: gossip.StatusAlive, Meta: gossip.Meta{Protocol: 7}}, "", ""},
		{"n3 alive at 6", gossip.Member{Name: "n3", Status: gossip.StatusAlive, Meta: gossip.Meta{Protocol: 6}}, "n3 (v6)", "n3 (v6)"},
		{"n3 failed", gossip.Member{Name: "n3", Status: gossip.StatusFailed, Meta: gossip.Meta{Protocol: 7}}, "", "n3 (v0)"},
		{"n3 not in gossip", gossip.Member{Name: "n9", Status: gossip.StatusAlive, Meta: gossip.Meta{Protocol: 7}}, "", "n3 (v0)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			members := []gossip.Member{
				{Name: "n1", Status: gossip.StatusAlive, Meta: gossip.Meta{Protocol: 7}},
				{Name: "n2", Status: gossip.StatusAlive, Meta: gossip.Meta{Protocol: 7}}, tt.n3}
			for _, g := range []struct {
				name string
				gate func(fsm.CmdType, int, []gossip.Member, []consensus.Server) error
				want string
			}{{"protocolGateNeed", protocolGateNeed, tt.user}, {"protocolGateEvery", protocolGateEvery, tt.self}} {
				err := g.gate(fsm.CmdArchiveJobs, need, members, servers)
				if (err == nil) != (g.want == "") || err != nil && !strings.Contains(err.Error(), g.want) {
					t.Errorf("%s = %v; want %q", g.name, err, g.want)
				}
			}
		})
	}
}

func TestValidProtocol(t *testing.T) {
	for _, tt := range []struct {
		p  int
		ok bool
	}{{0, true}, {fsm.ProtocolOldest, true}, {fsm.ProtocolVersion, true}, {-1, false}, {fsm.ProtocolVersion + 1, false}} {
		if err := validProtocol(tt.p); (err == nil) != tt.ok {
			t.Errorf("validProtocol(%d) = %v; want ok %v", tt.p, err, tt.ok)
		}
	}
	if got := (&Config{}).protocol(); got != fsm.ProtocolVersion {
		t.Errorf("Config{}.protocol() = %d; want this build's %d", got, fsm.ProtocolVersion)
	}
}
