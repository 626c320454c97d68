package gpu

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSimulated(t *testing.T) {
	tests := []struct {
		n     int
		numa  []int
		peers [][]int
	}{
		{n: 0},
		{n: -3},
		{n: 1, numa: []int{0}, peers: [][]int{nil}},
		{n: 2, numa: []int{0, 1}, peers: [][]int{{1}, {0}}},
		{n: 3, numa: []int{0, 0, 1}, peers: [][]int{{1, 2}, {0, 2}, {0, 1}}},
		{n: 8, numa: []int{0, 0, 0, 0, 1, 1, 1, 1}, peers: [][]int{
			{1, 2, 3, 4, 5, 6, 7}, {0, 2, 3, 4, 5, 6, 7}, {0, 1, 3, 4, 5, 6, 7}, {0, 1, 2, 4, 5, 6, 7},
			{0, 1, 2, 3, 5, 6, 7}, {0, 1, 2, 3, 4, 6, 7}, {0, 1, 2, 3, 4, 5, 7}, {0, 1, 2, 3, 4, 5, 6}}},
		{n: 10, numa: []int{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}, peers: [][]int{
			{1, 2, 3, 4, 5, 6, 7}, {0, 2, 3, 4, 5, 6, 7}, {0, 1, 3, 4, 5, 6, 7}, {0, 1, 2, 4, 5, 6, 7},
			{0, 1, 2, 3, 5, 6, 7}, {0, 1, 2, 3, 4, 6, 7}, {0, 1, 2, 3, 4, 5, 7}, {0, 1, 2, 3, 4, 5, 6},
			{9}, {8}}},
	}
	for _, tt := range tests {
		gpus := Simulated(tt.n, "H100", 80*1024)
		if len(gpus) != max(tt.n, 0) {
			t.Fatalf("Simulated(%d) gave %d GPUs", tt.n, len(gpus))
		}
		uuids := map[string]bool{}
		for i, g := range gpus {
			if g.Index != i || g.Model != "H100" || g.MemoryMiB != 80*1024 {
				t.Errorf("Simulated(%d)[%d] = %+v", tt.n, i, g)
			}
			if g.NUMA != tt.numa[i] {
				t.Errorf("Simulated(%d)[%d].NUMA = %d; want %d", tt.n, i, g.NUMA, tt.numa[i])
			}
			if diff := cmp.Diff(tt.peers[i], g.NVLinkPeers); diff != "" {
				t.Errorf("Simulated(%d)[%d].NVLinkPeers (-want +got):\n%s", tt.n, i, diff)
			}
			if !strings.HasPrefix(g.UUID, "GPU-sim-") || !strings.HasSuffix(g.UUID, "-"+strconv.Itoa(i)) || uuids[g.UUID] {
				t.Errorf("Simulated(%d)[%d].UUID = %q: want unique GPU-sim-<hash>-%d", tt.n, i, g.UUID, i)
			}
			uuids[g.UUID] = true
		}
	}
	// Deterministic per model, different across models.
	a, b, c := Simulated(2, "A100", 1), Simulated(2, "A100", 1), Simulated(2, "H100", 1)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("Simulated is not deterministic:\n%s", diff)
	}
	if a[0].UUID == c[0].UUID {
		t.Errorf("UUID %q is the same for models A100 and H100", a[0].UUID)
	}
	if got := a[1].UUID; got != "GPU-sim-"+a[0].UUID[len("GPU-sim-"):len("GPU-sim-")+8]+"-1" {
		t.Errorf("UUID of index 1 = %q; want GPU-sim-<same hash>-1", got)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		auto bool
		n    int
		err  bool
	}{
		{in: "auto", auto: true},
		{in: " AUTO ", auto: true},
		{in: "0", n: 0},
		{in: "8", n: 8},
		{in: "1024", n: 1024},
		{in: "1025", err: true},
		{in: "-1", err: true},
		{in: "+2", err: true},
		{in: "", err: true},
		{in: "2.5", err: true},
		{in: "eight", err: true},
		{in: "99999999999999999999", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			auto, n, err := Parse(tt.in)
			if tt.err {
				if err == nil || !strings.Contains(err.Error(), "--gpus") || !strings.Contains(err.Error(), `want "auto" or a whole number 0..1024`) {
					t.Fatalf("Parse(%q) = %v, %d, %v; want an error naming --gpus and the accepted forms", tt.in, auto, n, err)
				}
				return
			}
			if err != nil || auto != tt.auto || n != tt.n {
				t.Fatalf("Parse(%q) = %v, %d, %v; want %v, %d, nil", tt.in, auto, n, err, tt.auto, tt.n)
			}
		})
	}
}

// --gpus is user text: never panic, and accepted values are in range.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"auto", "0", "8", "-1", "1025", "", " 3 ", "0x10", "AuTo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		auto, n, err := Parse(s)
		if err != nil {
			return
		}
		if auto && n != 0 || n < 0 || n > MaxGPUs {
			t.Fatalf("Parse(%q) = %v, %d", s, auto, n)
		}
	})
}

// Discover must fail cleanly (ErrNoNVML, no crash) where there is no GPU
// driver, and find GPUs where there is one.
func TestDiscover(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	gpus, err := Discover(ctx)
	if _, statErr := os.Stat("/dev/nvidia0"); statErr != nil {
		if !errors.Is(err, ErrNoNVML) {
			t.Fatalf("Discover() without /dev/nvidia0 = %v, %v; want an error wrapping ErrNoNVML", gpus, err)
		}
		t.Logf("Discover() = %v", err)
		return
	}
	if err != nil {
		t.Fatalf("Discover() with /dev/nvidia0: %v", err)
	}
	if len(gpus) == 0 || gpus[0].UUID == "" {
		t.Fatalf("Discover() = %+v; want at least one GPU with a UUID", gpus)
	}
	for i, g := range gpus {
		t.Logf("gpu %d: %+v", i, g)
		if g.Index != i || g.UUID == "" || g.Model == "" || g.MemoryMiB == 0 || g.NUMA < -1 {
			t.Errorf("Discover()[%d] = %+v: want index %d, UUID, model, memory, NUMA >= -1", i, g, i)
		}
	}
}

func TestDiscoverHonorsCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Discover(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Discover(canceled ctx) = %v; want context.Canceled", err)
	}
}
