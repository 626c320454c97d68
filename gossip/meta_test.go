package gossip

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/memberlist"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

func worstCaseMeta() Meta {
	addr := func() string { // host:port padded to MaxAddrLen
		return strings.Repeat("h", MaxAddrLen-6) + ":65535"
	}
	return Meta{
		APIAddr:         addr(),
		RaftAddr:        addr(),
		GPUs:            int(^uint(0) >> 1),
		GPUModel:        strings.Repeat("m", MaxModelLen),
		GPUMemoryMiB:    ^uint64(0),
		CPUs:            int(^uint(0) >> 1),
		MemoryMiB:       ^uint64(0),
		Switch:          strings.Repeat("s", MaxLabelLen),
		SwitchParent:    strings.Repeat("p", MaxLabelLen),
		Block:           strings.Repeat("b", MaxLabelLen),
		Version:         strings.Repeat("v", MaxVersionLen),
		Protocol:        MaxProtocol,
		Features:        strings.Repeat("f", cluster.MaxFeatureBytes) + "," + strings.Repeat("g", cluster.MaxFeaturesBytes-cluster.MaxFeatureBytes-1),
		BootstrapExpect: int(^uint(0) >> 1),
		HasRaftState:    true,
		LeaseStretch:    MaxProtocol,
	}
}

// The worst case (every string at its limit, every number at its widest)
// must fit memberlist's NodeMeta limit, or UpdateNode would panic inside
// memberlist.
func TestMetaWorstCaseFits(t *testing.T) {
	m := worstCaseMeta()
	b, err := m.Encode()
	if err != nil {
		t.Fatalf("Encode(worst case) error: %v", err)
	}
	if len(b) > memberlist.MetaMaxSize {
		t.Fatalf("Encode(worst case) = %d bytes; want <= %d", len(b), memberlist.MetaMaxSize)
	}
	t.Logf("worst-case meta: %d of %d bytes", len(b), memberlist.MetaMaxSize)
	got, err := DecodeMeta(b)
	if err != nil {
		t.Fatalf("DecodeMeta(worst case) error: %v", err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
}

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []Meta{
		{},
		{APIAddr: "10.0.0.1:7070", RaftAddr: "10.0.0.1:7071", GPUs: 8, GPUModel: "NVIDIA H100 80GB HBM3",
			GPUMemoryMiB: 81559, CPUs: 224, MemoryMiB: 2 << 20, Switch: "leaf3", SwitchParent: "spine0",
			Block: "nvl72-0", Version: "0.1.0", Features: "ib,a100", BootstrapExpect: 3, HasRaftState: true, Protocol: 2},
		{APIAddr: "[fe80::1%eth0]:7070"},
	} {
		metaRoundTrip(t, m)
	}
}

// metaRoundTrip checks that m encodes and decodes back to itself.
func metaRoundTrip(t *testing.T, m Meta) {
	t.Helper()
	b, err := m.Encode()
	if err != nil {
		t.Fatalf("Encode(%+v) error: %v", m, err)
	}
	got, err := DecodeMeta(b)
	if err != nil {
		t.Fatalf("DecodeMeta(Encode(%+v)) error: %v", m, err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestMetaEncodeRejects(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name string
		m    Meta
		want string
	}{
		{"api addr too long", Meta{APIAddr: long(MaxAddrLen) + ":7070"}, "APIAddr is 69 bytes: want at most 64"},
		{"raft addr no port", Meta{RaftAddr: "10.0.0.1"}, "RaftAddr \"10.0.0.1\": want host:port"},
		{"model too long", Meta{GPUModel: long(maxModelLenAccepted + 1)}, "GPUModel is 49 bytes"},
		{"switch too long", Meta{Switch: long(MaxLabelLen + 1)}, "Switch is 49 bytes"},
		{"parent too long", Meta{SwitchParent: long(MaxLabelLen + 1)}, "SwitchParent is 49 bytes"},
		{"block too long", Meta{Block: long(MaxLabelLen + 1)}, "Block is 49 bytes"},
		{"version too long", Meta{Version: long(MaxVersionLen + 1)}, "Version is 32 bytes"},
		{"negative protocol", Meta{Protocol: -1}, "Protocol is -1: want 0 (none announced) to 127"},
		{"protocol too high", Meta{Protocol: MaxProtocol + 1}, "Protocol is 128"},
		{"features too long", Meta{Features: long(cluster.MaxFeaturesBytes + 1)}, "Features is 65 bytes"},
		{"bad feature", Meta{Features: "ib,a&b"}, `meta Features: feature "a&b"`},
		{"negative gpus", Meta{GPUs: -1}, "GPUs is -1"},
		{"negative cpus", Meta{CPUs: -2}, "CPUs is -2"},
		{"negative bootstrap", Meta{BootstrapExpect: -1}, "BootstrapExpect is -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.m.Encode()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Encode() error = %v; want one containing %q", err, tt.want)
			}
		})
	}
}

// A Meta that bypasses Validate's per-field limits (here via a raw
// encoding of oversized values) is refused by size with a clear error.
func TestMetaOversizedRefused(t *testing.T) {
	raw, err := msgpack.Marshal(map[string]string{"a": "h:1", "m": strings.Repeat("m", 600)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = DecodeMeta(raw)
	if !errors.Is(err, ErrMetaTooLarge) || !strings.Contains(err.Error(), "bytes, limit 512") {
		t.Fatalf("DecodeMeta(%d bytes) error = %v; want ErrMetaTooLarge naming the size", len(raw), err)
	}
	// Encode refuses a too-long field before it ever gets near the limit.
	_, err = Meta{GPUModel: strings.Repeat("m", 600)}.Encode()
	if err == nil || !strings.Contains(err.Error(), "GPUModel is 600 bytes: want at most 48") {
		t.Fatalf("Encode(600-byte model) error = %v", err)
	}
}

func TestDecodeMetaRejects(t *testing.T) {
	good, err := Meta{GPUs: 1}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	neg, err := msgpack.Marshal(map[string]int{"g": -3})
	if err != nil {
		t.Fatal(err)
	}
	checkRejects(t, "DecodeMeta", func(b []byte) error { _, err := DecodeMeta(b); return err }, []rejectCase{
		{"empty", nil, "empty"},
		{"trailing", append(append([]byte{}, good...), 0xc0), "1 trailing bytes"},
		{"not msgpack", []byte{0xc1}, "decode meta"},
		{"truncated", good[:len(good)-1], "decode meta"},
		{"wrong type", []byte{0x81, 0xa1, 'g', 0xa1, 'x'}, "decode meta"},
		{"invalid value", neg, "GPUs is -3"},
	})
}

// rejectCase is bytes from the network a decoder must refuse, with what
// its error must say.
type rejectCase struct {
	name string
	in   []byte
	want string
}

// checkRejects checks that decode refuses each case's bytes with an error
// containing the case's words.
func checkRejects(t *testing.T, name string, decode func([]byte) error, tests []rejectCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := decode(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%s(%x) error = %v; want one containing %q", name, tt.in, err, tt.want)
			}
		})
	}
}

// Gossip metadata arrives from the network: decoding must never panic, and
// whatever decodes must re-encode within the limit and round-trip.
func FuzzDecodeMeta(f *testing.F) {
	for _, m := range []Meta{{}, worstCaseMeta(), {APIAddr: "a:1", GPUs: 8, Switch: "leaf1", HasRaftState: true}} {
		b, err := m.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x80})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x81, 0xa1, 'm', 0xdb, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMeta(b)
		if err != nil {
			return
		}
		metaRoundTrip(t, m)
	})
}

// metaBeforeProtocol is Meta as agents built before protocol versions
// decode it: no Protocol field.
type metaBeforeProtocol struct {
	APIAddr  string `msgpack:"a,omitempty"`
	RaftAddr string `msgpack:"r,omitempty"`
	GPUs     int    `msgpack:"g,omitempty"`
	Version  string `msgpack:"v,omitempty"`
}

// Mixed versions during a rolling upgrade: metadata an older agent sent
// (no protocol) decodes with Protocol 0, which the leader's gate reads as
// fsm.ProtocolUnannounced; metadata a newer agent sends still decodes in
// an older one, which ignores the key it does not know.
func TestMetaProtocolCompat(t *testing.T) {
	// Meta.Encode's output before Protocol existed.
	old, err := hex.DecodeString("86a161ad31302e302e302e313a37303730a172ad31302e302e302e313a37303731a16708a173a56c65616633a176a734366362616565a168c3")
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeMeta(old)
	if err != nil {
		t.Fatalf("DecodeMeta(metadata of an older agent) error: %v", err)
	}
	want := Meta{APIAddr: "10.0.0.1:7070", RaftAddr: "10.0.0.1:7071", GPUs: 8, Switch: "leaf3", Version: "46cbaee", HasRaftState: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("DecodeMeta(older metadata) (-want +got):\n%s", diff)
	}
	// Encoding it again gives the same bytes: no key appears for a zero
	// Protocol, so an agent announcing none looks as it did.
	if again, err := got.Encode(); err != nil || !bytes.Equal(again, old) {
		t.Fatalf("Encode(older metadata) = %x, %v; want %x", again, err, old)
	}

	m := want
	m.Protocol = 2
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var older metaBeforeProtocol
	if err := wire.Decode(b, &older); err != nil {
		t.Fatalf("older agent decoding newer metadata: %v", err)
	}
	if older.APIAddr != m.APIAddr || older.Version != m.Version || older.GPUs != m.GPUs {
		t.Fatalf("older agent decoded %+v from %+v", older, m)
	}
}
