package gpu

import (
	"errors"
	"strings"
	"testing"
)

var (
	rackA = [16]byte{0x6f, 0x1c, 0x2a, 0x3b, 0x4c, 0x5d, 0x4e, 0x6f, 0x80, 0x91, 0xa2, 0xb3, 0xc4, 0xd5, 0xe6, 0xf7}
	rackB = [16]byte{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10}
)

func TestFabricBlockName(t *testing.T) {
	if got, want := FabricBlockName(rackA, 7), "nvl-6f1c2a3b-4c5d-4e6f-8091-a2b3c4d5e6f7-7"; got != want {
		t.Errorf("FabricBlockName = %q; want %q", got, want)
	}
	if FabricBlockName(rackA, 1) == FabricBlockName(rackA, 2) || FabricBlockName(rackA, 1) == FabricBlockName(rackB, 1) {
		t.Error("two partitions share a block name")
	}
}

func TestFabricBlock(t *testing.T) {
	done := func(u [16]byte, clique uint32) FabricInfo {
		return FabricInfo{ClusterUUID: u, CliqueID: clique, State: FabricCompleted}
	}
	for _, tc := range []struct {
		name  string
		infos []FabricInfo
		want  string
		err   string
	}{
		{"no gpus", nil, "", ""},
		{"hgx board", []FabricInfo{{}, {}, {}, {}}, "", ""},
		{"nvl72 tray", []FabricInfo{done(rackA, 3), done(rackA, 3), done(rackA, 3), done(rackA, 3)}, FabricBlockName(rackA, 3), ""},
		{"zero uuid", []FabricInfo{{State: FabricCompleted}}, "", ""},
		{"one gpu outside", []FabricInfo{{}, done(rackA, 3)}, FabricBlockName(rackA, 3), ""},
		{"registering", []FabricInfo{done(rackA, 3), {State: FabricInProgress}}, "", "gpu 1: NVLink fabric registration not finished"},
		{"not started", []FabricInfo{{State: FabricNotStarted}}, "", "not finished"},
		{"failed", []FabricInfo{{State: FabricCompleted, ClusterUUID: rackA, Err: errors.New("ERROR_UNKNOWN")}}, "", "gpu 0: NVLink fabric registration failed: ERROR_UNKNOWN"},
		{"two cliques", []FabricInfo{done(rackA, 3), done(rackA, 4)}, "", "gpus 0 and 1 are in different NVLink domains"},
		{"two racks", []FabricInfo{done(rackA, 3), done(rackB, 3)}, "", "different NVLink domains"},
		{"bad state", []FabricInfo{{State: 9}}, "", "unknown NVLink fabric state 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FabricBlock(tc.infos)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("FabricBlock error %v; want %q", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("FabricBlock = %q; want %q", got, tc.want)
			}
		})
	}
	if _, err := FabricBlock([]FabricInfo{{State: FabricInProgress}}); !errors.Is(err, ErrFabricPending) {
		t.Errorf("in progress: %v; want ErrFabricPending", err)
	}
}
