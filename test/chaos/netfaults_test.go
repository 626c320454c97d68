package chaos_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	osexec "os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/chaos"
)

// udpHelperEnv makes the test binary a UDP helper (see TestMain), run
// inside an agent's namespace: "recv ADDR" counts the datagrams that
// arrive at ADDR and prints the count once none came for udpIdle;
// "send ADDR N" sends N datagrams to ADDR, one every udpPace.
const udpHelperEnv = "SHOAL_CHAOS_UDP"

const (
	udpBurst   = 300
	udpSize    = 200
	udpPace    = time.Millisecond
	udpIdle    = 1500 * time.Millisecond
	udpMaxWait = 15 * time.Second
)

func udpHelper(spec string) int {
	f := strings.Fields(spec)
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "udp helper %q: %v\n", spec, err)
		return 2
	}
	switch {
	case len(f) == 2 && f[0] == "recv":
		conn, err := net.ListenPacket("udp", f[1])
		if err != nil {
			return fail(err)
		}
		defer conn.Close()
		fmt.Println("ready")
		buf := make([]byte, 2048)
		n, start := 0, time.Now()
		for time.Since(start) < udpMaxWait {
			// Before the first datagram wait long; after it, stop once
			// the link has been quiet for udpIdle.
			wait := udpMaxWait - time.Since(start)
			if n > 0 {
				wait = udpIdle
			}
			_ = conn.SetReadDeadline(time.Now().Add(wait))
			if _, _, err := conn.ReadFrom(buf); err != nil {
				break
			}
			n++
		}
		fmt.Println(n)
		return 0
	case len(f) == 3 && f[0] == "send":
		count, err := strconv.Atoi(f[2])
		if err != nil {
			return fail(err)
		}
		conn, err := net.Dial("udp", f[1])
		if err != nil {
			return fail(err)
		}
		defer conn.Close()
		payload := make([]byte, udpSize)
		for range count {
			// A dropped datagram may come back as ECONNREFUSED or ENOBUFS
			// on the next write: what got through is the receiver's count.
			_, _ = conn.Write(payload)
			time.Sleep(udpPace)
		}
		return 0
	}
	return fail(fmt.Errorf("want \"recv ADDR\" or \"send ADDR N\""))
}

// udpThrough sends udpBurst datagrams from agent from's namespace to agent
// to's address and returns how many arrived.
func udpThrough(t *testing.T, h *chaos.Harness, from, to int) int {
	t.Helper()
	addr := net.JoinHostPort(h.Agents[to].Addr, "9999")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := func(ns, spec string) *osexec.Cmd {
		cmd := osexec.Command("ip", "netns", "exec", ns, self)
		cmd.Env = append(os.Environ(), udpHelperEnv+"="+spec)
		return cmd
	}
	recv := helper(h.Agents[to].Netns(), "recv "+addr)
	recv.Stderr = os.Stderr
	out, err := recv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := recv.Start(); err != nil {
		t.Fatalf("start receiver: %v", err)
	}
	defer recv.Wait()
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("receiver in %s: no ready line (%q): %v", h.Agents[to].Netns(), sc.Text(), sc.Err())
	}
	if b, err := helper(h.Agents[from].Netns(), fmt.Sprintf("send %s %d", addr, udpBurst)).CombinedOutput(); err != nil {
		t.Fatalf("sender in %s: %v: %s", h.Agents[from].Netns(), err, b)
	}
	if !sc.Scan() {
		t.Fatalf("receiver in %s: no count: %v", h.Agents[to].Netns(), sc.Err())
	}
	n, err := strconv.Atoi(sc.Text())
	if err != nil {
		t.Fatalf("receiver count %q: %v", sc.Text(), err)
	}
	return n
}

// inNetns runs a command inside agent i's namespace and returns its output.
func inNetns(t *testing.T, h *chaos.Harness, i int, args ...string) string {
	t.Helper()
	out, err := osexec.Command("ip", append([]string{"netns", "exec", h.Agents[i].Netns()}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("in %s: %s: %v: %s", h.Agents[i].Netns(), strings.Join(args, " "), err, out)
	}
	return string(out)
}

var (
	tbfStats   = regexp.MustCompile(`qdisc tbf .*rate (\d+)Kbit[\s\S]*?Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)`)
	nftCounter = regexp.MustCompile(`numgen random mod 100 < (\d+) counter packets (\d+)`)
)

// TestSlowAndLossNetNS applies the slow and loss faults to a real agent's
// namespace and checks that each takes effect — the tbf queue or the
// nftables rule is there and drops part of a burst of datagrams while the
// rest still arrives — and is gone after Heal, with every datagram
// arriving again and the cluster healthy.
func TestSlowAndLossNetNS(t *testing.T) {
	requireNetNS(t)
	ctx := context.Background()
	log := testLog(t, slog.LevelWarn)
	h := startHarness(t, chaos.Options{Binary: shoalBin, Nodes: 3, Dir: shortDir(t), Net: chaos.NetNamespaces, Log: log})
	const from, to = 0, 1

	// Healthy link: every datagram arrives; this is what the faults reduce.
	if n := udpThrough(t, h, from, to); n != udpBurst {
		t.Fatalf("before any fault %d of %d datagrams arrived; want all", n, udpBurst)
	}
	healed := func(what string) {
		t.Helper()
		if err := h.Heal(ctx); err != nil {
			t.Fatalf("heal %s: %v", what, err)
		}
		if q := inNetns(t, h, from, "tc", "qdisc", "show", "dev", "eth0"); strings.Contains(q, "tbf") {
			t.Errorf("after healing %s the tbf queue is still there: %s", what, q)
		}
		if r := inNetns(t, h, from, "nft", "list", "ruleset"); strings.Contains(r, "numgen") {
			t.Errorf("after healing %s the loss rule is still there: %s", what, r)
		}
		if n := udpThrough(t, h, from, to); n != udpBurst {
			t.Errorf("after healing %s %d of %d datagrams arrived; want all", what, n, udpBurst)
		}
	}

	t.Run("slow", func(t *testing.T) {
		// 300 datagrams of 200 bytes in ~0.3s is ~1.6 Mbit/s: a 64 kbit/s
		// queue holding 200ms passes the burst and a trickle, drops the rest.
		if err := h.Slow(ctx, from, 64, 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		n := udpThrough(t, h, from, to)
		stats := inNetns(t, h, from, "tc", "-s", "qdisc", "show", "dev", "eth0")
		m := tbfStats.FindStringSubmatch(stats)
		if m == nil {
			t.Fatalf("no tbf queue on eth0 of %s: %s", h.Agents[from].Name, stats)
		}
		if m[1] != "64" || m[2] == "0" || m[4] == "0" {
			t.Errorf("tbf on eth0: rate %s Kbit, sent %s bytes, dropped %s; want 64, some sent, some dropped:\n%s", m[1], m[2], m[4], stats)
		}
		if n == 0 || n >= udpBurst {
			t.Errorf("slow link: %d of %d datagrams arrived; want some, not all", n, udpBurst)
		}
		t.Logf("slow link at 64 kbit: %d of %d datagrams arrived; %s", n, udpBurst, strings.Join(strings.Fields(stats), " "))
		healed("slow")
	})

	t.Run("loss", func(t *testing.T) {
		if err := h.Lose(ctx, from, 30); err != nil {
			t.Fatal(err)
		}
		n := udpThrough(t, h, from, to)
		rules := inNetns(t, h, from, "nft", "list", "table", "inet", "shoalchaos")
		counters := nftCounter.FindAllStringSubmatch(rules, -1)
		if len(counters) != 2 {
			t.Fatalf("want a loss rule on input and on output, got %d:\n%s", len(counters), rules)
		}
		dropped := 0
		for _, c := range counters {
			if c[1] != "30" {
				t.Errorf("loss rule drops %s%%; want 30:\n%s", c[1], rules)
			}
			d, _ := strconv.Atoi(c[2])
			dropped += d
		}
		// Dropping 30% at random, all 300 passing or none has a chance
		// below 1e-40.
		if dropped == 0 || n == 0 || n >= udpBurst {
			t.Errorf("30%% loss: %d of %d datagrams arrived, rules dropped %d packets; want some of each", n, udpBurst, dropped)
		}
		t.Logf("30%% loss: %d of %d datagrams arrived, %d packets dropped", n, udpBurst, dropped)
		healed("loss")
	})

	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	waitHealthy(t, wctx, h, "after heal")
}
