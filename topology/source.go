package topology

import "context"

// Source names, as Found.Source and the agent's logs give them.
const (
	SourceLLDP = "lldp"
	SourceIB   = "ib"
	SourceNVML = "nvml"
)

// Found is what one source learned of this node's place. An empty field
// is something the source does not know.
type Found struct {
	Source string
	// Leaf is the leaf switch the node's cluster interface is cabled to.
	Leaf string
	// Parent is the leaf's parent switch (a spine).
	Parent string
	// Block is the node's NVLink domain.
	Block string
}

// A Source discovers part of this node's place: it runs a tool or reads
// a device and parses what it gets with this package's pure parsers.
// Discover returns a zero Found and no error where the facility is absent
// (no lldpd, no InfiniBand, no NVLink fabric); an error is a facility
// that is there and failed.
type Source interface {
	Name() string
	Discover(ctx context.Context) (Found, error)
}
