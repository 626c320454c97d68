package consensus

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/shoal-sched/shoal/pki"
)

// tlsNodeStream returns a stream factory for a node certified by ca.
func tlsNodeStream(t *testing.T, ca *pki.CA, name string) func(tb testing.TB, addr string) raft.StreamLayer {
	t.Helper()
	b := issueBundle(t, ca, name)
	return func(tb testing.TB, addr string) raft.StreamLayer {
		s, err := NewTLSStream(addr, "", b.ServerConfig(true), b.ClientConfig(""))
		if err != nil {
			tb.Fatalf("NewTLSStream(%s) = %v", addr, err)
		}
		return s
	}
}

func issueBundle(t *testing.T, ca *pki.CA, name string) *pki.Bundle {
	t.Helper()
	key, err := pki.NewNodeKey()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.SignNode(pki.NodeRequest{Name: name, PublicKey: &key.PublicKey}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, err := pki.NewBundle(ca, tls.Certificate{Certificate: [][]byte{c.Raw}, PrivateKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTLSStream: servers with node certificates of one CA elect and
// replicate over mutual TLS; a server certified by another CA cannot take
// part (DESIGN: nodes prove they belong), and a silent TCP peer does not
// hold up the others' connections.
func TestTLSStream(t *testing.T) {
	ca, err := pki.NewCA("test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]*testNode, 3)
	var servers []Server
	for i := range nodes {
		id := fmt.Sprintf("s%d", i+1)
		nodes[i] = &testNode{id: id, dir: t.TempDir(), stream: tlsNodeStream(t, ca, id)}
		nodes[i].open(t, FastTiming())
		servers = append(servers, Server{ID: id, Addr: nodes[i].addr, Suffrage: Voter})
	}
	// A silent peer holds a TCP connection to every server throughout.
	for _, n := range nodes {
		c, err := net.Dial("tcp", n.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	for _, n := range nodes {
		if err := n.r.Bootstrap(servers); err != nil {
			t.Fatalf("Bootstrap(%s) = %v", n.id, err)
		}
	}
	_, index := submit(t, nodes, "over-tls")
	waitConverged(t, nodes, index)

	// A rogue server with a certificate of its own CA, bootstrapped as s1
	// with s2 and s3 for peers, campaigns again and again: were one of its
	// vote requests to reach them, its higher term would unseat their
	// leader. Once it has tried each peer a few times (a count of its
	// dials, not a time), none of its dials may have connected; on the
	// first that does, the test fails at once.
	rogueCA, err := pki.NewCA("rogue", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var rogueDials *dialCounter
	rogueStream := tlsNodeStream(t, rogueCA, "s1")
	rogue := &testNode{id: "s1", dir: t.TempDir(), stream: func(tb testing.TB, addr string) raft.StreamLayer {
		rogueDials = &dialCounter{StreamLayer: rogueStream(tb, addr)}
		return rogueDials
	}}
	rogue.open(t, FastTiming())
	rs := append([]Server{{ID: "s1", Addr: rogue.addr, Suffrage: Voter}}, servers[1:]...)
	if err := rogue.r.Bootstrap(rs); err != nil {
		t.Fatal(err)
	}
	const rogueTries = 3 // dials to each peer: campaigns of the rogue's
	waitFor(t, fmt.Sprintf("the rogue to connect, or to fail to dial each peer %d times", rogueTries), func() bool {
		if rogueDials.connected() > 0 {
			return true
		}
		for _, s := range servers[1:] {
			if rogueDials.failedTo(s.Addr) < rogueTries {
				return false
			}
		}
		return true
	})
	if n := rogueDials.connected(); n != 0 {
		t.Errorf("the rogue server connected %d times to servers of another CA", n)
	}
	_, index = submit(t, nodes, "after-rogue")
	waitConverged(t, nodes, index)
	if got := rogue.st.Index(); got >= index {
		t.Errorf("rogue replica applied index %d of the cluster's log", got)
	}
}

// dialCounter is a stream layer that counts its dials: those that
// connected, and those that failed by address.
type dialCounter struct {
	raft.StreamLayer
	mu     sync.Mutex
	ok     int
	failed map[string]int
}

func (d *dialCounter) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := d.StreamLayer.Dial(addr, timeout)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		if d.failed == nil {
			d.failed = map[string]int{}
		}
		d.failed[string(addr)]++
	} else {
		d.ok++
	}
	return c, err
}

func (d *dialCounter) connected() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ok
}

func (d *dialCounter) failedTo(addr string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed[addr]
}
