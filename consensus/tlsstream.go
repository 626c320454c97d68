package consensus

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Bounds of the TLS stream layer's accepting side.
const (
	// tlsHandshakeTimeout bounds an accepted connection's handshake: a
	// peer that connects and says nothing must not hold a slot forever.
	tlsHandshakeTimeout = 10 * time.Second
	// maxPendingHandshakes bounds the handshakes under way at once; more
	// connections wait in the kernel's backlog.
	maxPendingHandshakes = 64
)

// tlsStream is raft's stream layer over TCP with mutual TLS: both ends
// present node certificates and verify each other's (the configurations
// come from the caller, pki's in the agent). Handshakes of accepted
// connections run concurrently, so a silent or slow peer cannot hold up
// raft's other connections.
type tlsStream struct {
	ln        net.Listener
	advertise net.Addr
	server    *tls.Config
	client    *tls.Config

	ready  chan net.Conn // handshaken connections for Accept
	closed chan struct{}
	done   chan struct{} // closed when acceptLoop has returned
	once   sync.Once
	wg     sync.WaitGroup // handshakes in flight
}

// NewTLSStream listens on bind and returns a raft.StreamLayer whose
// connections, both accepted and dialled, are TLS: server's configuration
// must require and verify a client certificate, client's must verify the
// server's. advertise is the address other servers dial ("" = bind).
func NewTLSStream(bind, advertise string, server, client *tls.Config) (raft.StreamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raft listen on %s: %w", bind, err)
	}
	if advertise == "" {
		advertise = ln.Addr().String()
	}
	adv, err := net.ResolveTCPAddr("tcp", advertise)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("resolve raft advertise address %s: %w", advertise, err)
	}
	if adv.IP == nil || adv.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft advertise address %s: want an address other servers can dial", advertise)
	}
	s := &tlsStream{ln: ln, advertise: adv, server: server, client: client,
		ready: make(chan net.Conn), closed: make(chan struct{}), done: make(chan struct{})}
	go s.acceptLoop() // stopped by Close
	return s, nil
}

// acceptLoop accepts TCP connections and hands each to a handshake of its
// own; at most maxPendingHandshakes run at once.
func (s *tlsStream) acceptLoop() {
	defer close(s.done)
	slots := make(chan struct{}, maxPendingHandshakes)
	for {
		select {
		case slots <- struct{}{}:
		case <-s.closed:
			return
		}
		c, err := s.ln.Accept()
		if err != nil {
			<-slots
			select {
			case <-s.closed:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			time.Sleep(50 * time.Millisecond) // EMFILE and the like: do not spin
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-slots }()
			s.handshake(c)
		}()
	}
}

// handshake completes an accepted connection's TLS handshake and offers it
// to Accept; one that fails (a peer without a node certificate of this
// cluster) is closed, so raft never reads a byte from it.
func (s *tlsStream) handshake(c net.Conn) {
	tc := tls.Server(c, s.server)
	_ = tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		c.Close()
		return
	}
	_ = tc.SetDeadline(time.Time{})
	select {
	case s.ready <- tc:
	case <-s.closed:
		tc.Close()
	}
}

// Accept returns the next connection whose handshake succeeded.
func (s *tlsStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.ready:
		return c, nil
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and waits for the handshakes in flight to end.
func (s *tlsStream) Close() error {
	var err error
	s.once.Do(func() {
		close(s.closed)
		err = s.ln.Close()
		<-s.done
		s.wg.Wait()
	})
	return err
}

func (s *tlsStream) Addr() net.Addr { return s.advertise }

// Dial connects to another server and completes the handshake.
func (s *tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	c, err := tls.DialWithDialer(d, "tcp", string(addr), s.client)
	if err != nil {
		return nil, fmt.Errorf("raft dial %s: %w", addr, err)
	}
	return c, nil
}
