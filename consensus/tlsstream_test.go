package consensus

import (
	"crypto/tls"
	"fmt"
	"net"
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

	// A rogue server with a certificate of its own CA, bootstrapped with a
	// higher term's worth of elections, cannot reach any of them.
	rogueCA, err := pki.NewCA("rogue", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rogue := &testNode{id: "s1", dir: t.TempDir(), stream: tlsNodeStream(t, rogueCA, "s1")}
	rogue.open(t, FastTiming())
	rs := append([]Server{{ID: "s1", Addr: rogue.addr, Suffrage: Voter}}, servers[1:]...)
	if err := rogue.r.Bootstrap(rs); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // many election timeouts of the rogue
	for _, n := range nodes {
		if id, _ := n.r.Leader(); id == "" {
			t.Errorf("%s lost its leader to a rogue server", n.id)
		}
	}
	_, index = submit(t, nodes, "after-rogue")
	waitConverged(t, nodes, index)
	if got := rogue.st.Index(); got >= index {
		t.Errorf("rogue replica applied index %d of the cluster's log", got)
	}
}
