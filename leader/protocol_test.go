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
