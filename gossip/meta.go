package gossip

import (
	"bytes"
	"errors"
	"fmt"
	"net"

	"github.com/hashicorp/memberlist"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/wire"
)

// Limits on the strings a Meta may carry. They are chosen so that a Meta
// with every string at its limit and every number at its widest still
// encodes within memberlist.MetaMaxSize (TestMetaWorstCaseFits proves it).
// Features gets cluster.MaxFeaturesBytes; the address and model limits
// were lowered (from 80 and 64) to make room. An advertised address is an
// IP and a port, at most 47 bytes for an IPv6 one without a zone. The
// version limit was lowered from 32 to 31 (a msgpack fixstr, one header
// byte instead of two) to make room for Protocol; agents cut their
// version string to it. The model an agent announces was cut from 48 to
// 42 bytes to make room for LeaseStretch (a 16th field, whose map header
// takes two more bytes); a model of up to 48 bytes, from an older agent,
// is still accepted.
const (
	MaxAddrLen    = 64 // APIAddr, RaftAddr
	MaxModelLen   = 42 // GPUModel, as an agent announces it
	MaxLabelLen   = 48 // Switch, SwitchParent, Block
	MaxVersionLen = 31 // Version
	// MaxProtocol bounds Protocol and LeaseStretch so that they encode
	// in one byte (a msgpack positive fixint).
	MaxProtocol = 127
	// maxModelLenAccepted is the model length Validate accepts: what
	// older agents announced.
	maxModelLenAccepted = 48
)

// ErrMetaTooLarge is returned (wrapped) when an encoded Meta would not fit
// in memberlist's node metadata.
var ErrMetaTooLarge = errors.New("node metadata too large")

// Meta is what a node announces about itself over gossip. It is encoded
// with msgpack under one- or two-letter keys to fit memberlist's 512-byte
// NodeMeta limit; the keys are a wire format: add fields with new keys,
// never reuse or rename one.
type Meta struct {
	APIAddr  string `msgpack:"a,omitempty"` // host:port of the HTTP API
	RaftAddr string `msgpack:"r,omitempty"` // host:port of the raft transport

	GPUs         int    `msgpack:"g,omitempty"`
	GPUModel     string `msgpack:"m,omitempty"`
	GPUMemoryMiB uint64 `msgpack:"gm,omitempty"` // per GPU
	CPUs         int    `msgpack:"c,omitempty"`
	MemoryMiB    uint64 `msgpack:"mm,omitempty"`

	Switch       string `msgpack:"s,omitempty"`
	SwitchParent string `msgpack:"sp,omitempty"`
	Block        string `msgpack:"b,omitempty"`
	// Features are the node's features (--features), joined with commas:
	// one string costs less than a list under the 512-byte limit.
	Features string `msgpack:"f,omitempty"`

	Version string `msgpack:"v,omitempty"`
	// Protocol is the protocol version the node speaks (fsm.ProtocolVersion
	// or lower): the leader proposes a command type only once every raft
	// server announces the version that introduced it. 0 (absent): a node
	// built before protocol versions (fsm.ProtocolUnannounced).
	Protocol int `msgpack:"p,omitempty"`

	// BootstrapExpect is the --bootstrap-expect this node started with
	// (0 = none).
	BootstrapExpect int `msgpack:"be,omitempty"`
	// HasRaftState says this node already belongs to a formed raft
	// cluster (it bootstrapped one or has raft state on disk).
	HasRaftState bool `msgpack:"h,omitempty"`

	// LeaseStretch is the most this node, were it elected, counts a node's
	// lease as stretched: it waits that many --lease-ttl from its election
	// before judging a node (leader.MaxLeaseStretch). The leader stretches
	// leases only as far as every live member announces, so a cluster
	// mid-upgrade never elects a leader that would judge a node by less
	// than it was granted. 0 (absent): a node built before stretched
	// leases (no stretching).
	LeaseStretch int `msgpack:"ls,omitempty"`
}

// Validate checks every field against the limits above and the address
// fields for host:port form. An error names the field and the accepted form.
func (m Meta) Validate() error {
	for _, f := range []struct {
		name, val string
		max       int
	}{
		{"APIAddr", m.APIAddr, MaxAddrLen},
		{"RaftAddr", m.RaftAddr, MaxAddrLen},
		{"GPUModel", m.GPUModel, maxModelLenAccepted},
		{"Switch", m.Switch, MaxLabelLen},
		{"SwitchParent", m.SwitchParent, MaxLabelLen},
		{"Block", m.Block, MaxLabelLen},
		{"Version", m.Version, MaxVersionLen},
		{"Features", m.Features, cluster.MaxFeaturesBytes},
	} {
		if len(f.val) > f.max {
			return fmt.Errorf("meta %s is %d bytes: want at most %d", f.name, len(f.val), f.max)
		}
	}
	if m.Protocol < 0 || m.Protocol > MaxProtocol {
		return fmt.Errorf("meta Protocol is %d: want 0 (none announced) to %d", m.Protocol, MaxProtocol)
	}
	if m.LeaseStretch < 0 || m.LeaseStretch > MaxProtocol {
		return fmt.Errorf("meta LeaseStretch is %d: want 0 (none announced) to %d", m.LeaseStretch, MaxProtocol)
	}
	if _, err := cluster.ParseFeatures(m.Features); err != nil {
		return fmt.Errorf("meta Features: %w", err)
	}
	for _, f := range []struct{ name, val string }{
		{"APIAddr", m.APIAddr},
		{"RaftAddr", m.RaftAddr},
	} {
		if f.val == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(f.val); err != nil {
			return fmt.Errorf("meta %s %q: want host:port: %w", f.name, f.val, err)
		}
	}
	for _, f := range []struct {
		name string
		val  int
	}{
		{"GPUs", m.GPUs},
		{"CPUs", m.CPUs},
		{"BootstrapExpect", m.BootstrapExpect},
	} {
		if f.val < 0 {
			return fmt.Errorf("meta %s is %d: want a non-negative count", f.name, f.val)
		}
	}
	return nil
}

// Encode validates m and returns its msgpack encoding, which is at most
// memberlist.MetaMaxSize bytes.
func (m Meta) Encode() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("encode meta: %w", err)
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("encode meta: %w", err)
	}
	if buf.Len() > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("encode meta: %w: %d bytes, limit %d", ErrMetaTooLarge, buf.Len(), memberlist.MetaMaxSize)
	}
	return buf.Bytes(), nil
}

// DecodeMeta decodes what Encode produced. It never panics; it rejects
// empty or oversized input, trailing bytes, and values that fail Validate,
// so every Meta it returns could have been encoded. Unknown keys (from a
// newer version) are ignored.
func DecodeMeta(b []byte) (Meta, error) {
	if len(b) == 0 {
		return Meta{}, errors.New("decode meta: empty")
	}
	if len(b) > memberlist.MetaMaxSize {
		return Meta{}, fmt.Errorf("decode meta: %w: %d bytes, limit %d", ErrMetaTooLarge, len(b), memberlist.MetaMaxSize)
	}
	var m Meta
	// wire.Decode refuses length headers larger than the bytes present:
	// msgpack alone would preallocate what a hostile header claims.
	if err := wire.Decode(b, &m); err != nil {
		return Meta{}, fmt.Errorf("decode meta: %w", err)
	}
	if err := m.Validate(); err != nil {
		return Meta{}, fmt.Errorf("decode meta: %w", err)
	}
	return m, nil
}
