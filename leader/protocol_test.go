package leader

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/fsm"
)

// TestProtocolGate: an entry is proposed only when every server counted
// announces the protocol it needs, and the refusal names the older ones
// in order (DESIGN invariant 5: replicas agree; node's TestProtocolGate
// checks which servers are counted).
func TestProtocolGate(t *testing.T) {
	need := fsm.CmdArchiveJobs.Since()
	tests := []struct {
		name    string
		t       fsm.CmdType
		need    int
		servers []ServerProtocol
		want    string // "" allowed; else part of the refusal
	}{
		{"every server new", fsm.CmdArchiveJobs, need, []ServerProtocol{{"n1", need}, {"n2", need + 1}}, ""},
		{"no server counted", fsm.CmdArchiveJobs, need, nil, ""},
		{"older ones named in order", fsm.CmdArchiveJobs, need, []ServerProtocol{{"n3", need - 1}, {"n1", need - 1}, {"n2", need}},
			fmt.Sprintf("propose ArchiveJobs: command not supported by every server of the cluster: it needs protocol v%d; older servers: n1 (v%d), n3 (v%d); upgrade them and retry", need, need-1, need-1)},
		{"a later field needs more", fsm.CmdSubmitJob, 4, []ServerProtocol{{"n1", 3}}, "it needs protocol v4; older servers: n1 (v3)"},
		{"unknown type", fsm.CmdType(200), 1, nil, "this agent does not know the type"},
		{"no need known", fsm.CmdSubmitJob, 0, nil, "this agent does not know the type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ProtocolGate(tt.t, tt.need, tt.servers)
			if tt.want == "" {
				if err != nil {
					t.Errorf("ProtocolGate = %v; want nil", err)
				}
				return
			}
			if !errors.Is(err, fsm.ErrUnsupportedByCluster) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ProtocolGate = %v; want ErrUnsupportedByCluster saying %q", err, tt.want)
			}
		})
	}
}

// TestReplicaCap: bounded membership (workers) waits until every live
// agent can be a worker; a rolling upgrade from before workers keeps
// every node a server; negative replicas mean none.
func TestReplicaCap(t *testing.T) {
	w := WorkersProtocol
	for _, tt := range []struct {
		replicas  int
		announced []int
		want      int
		every     bool // EverySpeaks(WorkersProtocol)
	}{
		{2, []int{w, w + 1}, 2, true},
		{-1, []int{w}, -1, true},
		{-5, []int{w}, -1, true},
		{2, []int{w, w - 1}, 0, false},
		{2, nil, 2, true},
	} {
		if got := ReplicaCap(tt.replicas, tt.announced); got != tt.want {
			t.Errorf("ReplicaCap(%d, %v) = %d; want %d", tt.replicas, tt.announced, got, tt.want)
		}
		if got := EverySpeaks(w, tt.announced); got != tt.every {
			t.Errorf("EverySpeaks(%d, %v) = %v; want %v", w, tt.announced, got, tt.every)
		}
	}
}
