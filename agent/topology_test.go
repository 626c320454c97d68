package agent

import (
	"testing"

	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/topology"
)

// The names discovery may announce fit the gossip metadata.
func TestTopologyNameFitsGossip(t *testing.T) {
	if topology.MaxNameLen != gossip.MaxLabelLen {
		t.Fatalf("topology.MaxNameLen = %d; want gossip.MaxLabelLen %d", topology.MaxNameLen, gossip.MaxLabelLen)
	}
}
