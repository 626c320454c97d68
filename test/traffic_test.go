package test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// recorder is a proxy in front of one agent: it listens on the address the
// agent advertises and relays TCP and UDP to the address it binds, keeping
// a copy of every byte that passes in either direction.
type recorder struct {
	mu   sync.Mutex
	data bytes.Buffer
	lns  []net.Listener
	pcs  []net.PacketConn
	wg   sync.WaitGroup
}

func (r *recorder) record(p []byte) {
	r.mu.Lock()
	r.data.Write(p)
	r.mu.Unlock()
}

func (r *recorder) contains(marker []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Contains(r.data.Bytes(), marker)
}

func (r *recorder) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.data.Len()
}

// tee copies src to dst, recording what passes.
type tee struct {
	r *recorder
	w io.Writer
}

func (t tee) Write(p []byte) (int, error) {
	t.r.record(p)
	return t.w.Write(p)
}

// startRecorder proxies fromHost:port to toHost:port for each port.
func startRecorder(t *testing.T, fromHost, toHost string, ports ...int) *recorder {
	t.Helper()
	r := &recorder{}
	for _, port := range ports {
		from := net.JoinHostPort(fromHost, strconv.Itoa(port))
		to := net.JoinHostPort(toHost, strconv.Itoa(port))
		ln, err := net.Listen("tcp", from)
		if err != nil {
			t.Fatalf("recorder: listen %s: %v", from, err)
		}
		r.lns = append(r.lns, ln)
		r.wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				r.wg.Go(func() {
					defer c.Close()
					up, err := net.DialTimeout("tcp", to, 5*time.Second)
					if err != nil {
						return
					}
					defer up.Close()
					done := make(chan struct{}, 2)
					go func() { _, _ = io.Copy(tee{r, up}, c); up.Close(); done <- struct{}{} }()
					go func() { _, _ = io.Copy(tee{r, c}, up); c.Close(); done <- struct{}{} }()
					<-done
					<-done
				})
			}
		})
		// Gossip's UDP: one way is enough, memberlist answers to the
		// sender's advertised address (its own recorder).
		pc, err := net.ListenPacket("udp", from)
		if err != nil {
			t.Fatalf("recorder: listen udp %s: %v", from, err)
		}
		r.pcs = append(r.pcs, pc)
		out, err := net.Dial("udp", to)
		if err != nil {
			t.Fatalf("recorder: dial udp %s: %v", to, err)
		}
		r.wg.Go(func() {
			defer out.Close()
			buf := make([]byte, 64<<10)
			for {
				n, _, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				r.record(buf[:n])
				_, _ = out.Write(buf[:n])
			}
		})
	}
	t.Cleanup(func() {
		for _, ln := range r.lns {
			ln.Close()
		}
		for _, pc := range r.pcs {
			pc.Close()
		}
		r.wg.Wait()
	})
	return r
}

// TestNodeTrafficIsEncrypted (issue 12): every byte between agents passes
// through recording proxies; a job submitted through a follower (so it is
// forwarded over HTTP and replicated through raft) leaves no trace of its
// command in what they recorded. The same cluster with --insecure does
// show it: the proxies really carry the cluster's traffic.
func TestNodeTrafficIsEncrypted(t *testing.T) {
	marker := "shoal-traffic-marker-7f3a"
	for _, insecure := range []bool{false, true} {
		t.Run(fmt.Sprintf("insecure=%v", insecure), func(t *testing.T) {
			base := 20
			if insecure {
				base = 30
			}
			adv := func(i int) string { return fmt.Sprintf("127.0.0.%d", base+i) }
			var recs []*recorder
			c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1, Insecure: insecure, Advertise: adv,
				BeforeStart: func(c *localcluster.Cluster) error {
					for i, a := range c.Agents {
						recs = append(recs, startRecorder(t, adv(i), "127.0.0.1", a.HTTPPort, a.RaftPort, a.GossipPort))
					}
					return nil
				}})
			leader := leaderIndex(t, c, 0)
			follower := c.Agents[(leader+1)%3]
			id := submit(t, follower, "--nodes", "3", "--", "/bin/echo", marker)
			if j := waitJob(t, follower, id, 30*time.Second); j.State != "COMPLETED" {
				t.Fatalf("job %d = %s; want COMPLETED", id, j.State)
			}
			total, seen := 0, 0
			for _, r := range recs {
				total += r.size()
				if r.contains([]byte(marker)) {
					seen++
				}
			}
			if total < 10000 {
				t.Fatalf("the recorders saw %d bytes: the cluster's traffic does not pass through them", total)
			}
			switch {
			case !insecure && seen > 0:
				t.Errorf("the job's command crossed %d of 3 recorders in plaintext (%d bytes recorded)", seen, total)
			case insecure && seen == 0:
				t.Errorf("with --insecure the command crossed no recorder in plaintext (%d bytes recorded): the test sees nothing", total)
			}
		})
	}
}
