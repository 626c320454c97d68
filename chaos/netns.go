package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Everything the harness creates in the kernel is named
// "shc<pid base 36>-<run base 36>" plus a suffix: "b" the bridge, "v<i>"
// the host end of agent i's veth, "n<i>" agent i's namespace. The pid lets
// the next run find what a crashed run left behind.
const namePrefix = "shc"

var leftoverName = regexp.MustCompile(`^shc([0-9a-z]+)-[0-9a-z]+(b|v[0-9]+|n[0-9]+)$`)

var runCounter atomic.Uint64

func newRunPrefix() string {
	return fmt.Sprintf("%s%s-%s", namePrefix, strconv.FormatInt(int64(os.Getpid()), 36), strconv.FormatUint(runCounter.Add(1), 36))
}

// subnet is the agents' network: 10.77.0.0/24, agent i at 10.77.0.(i+1).
// It exists only inside the namespaces (the bridge has no address in the
// host namespace and no namespace has a route out), so runs on one host
// never see each other's.
const subnet = "10.77.0."

// cmdTimeout bounds every ip/nft command.
const cmdTimeout = 15 * time.Second

// run runs a command and returns its error with its output.
func run(ctx context.Context, name string, args ...string) error {
	return runInput(ctx, "", name, args...)
}

func runInput(ctx context.Context, stdin, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	cmd := osexec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

func output(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	out, err := osexec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// NetNSMissing says what network namespaces need that this host lacks, or
// "" when the harness can use them.
func NetNSMissing() string {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (euid is "+strconv.Itoa(os.Geteuid())+")")
	}
	for _, tool := range []string{"ip", "nft", "tc"} {
		if _, err := osexec.LookPath(tool); err != nil {
			hint := map[string]string{"ip": "iproute2", "nft": "nftables", "tc": "iproute2"}[tool]
			missing = append(missing, fmt.Sprintf("the %s command (apt-get install -y %s)", tool, hint))
		}
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		missing = append(missing, "network namespace support (/proc/self/ns/net)")
	}
	return strings.Join(missing, ", ")
}

// netns is the network of one run: a bridge and one namespace per agent.
type netns struct {
	prefix string
	n      int
	log    *slog.Logger
}

func (x *netns) bridge() string        { return x.prefix + "b" }
func (x *netns) hostVeth(i int) string { return fmt.Sprintf("%sv%d", x.prefix, i) }
func (x *netns) ns(i int) string       { return fmt.Sprintf("%sn%d", x.prefix, i) }
func (x *netns) addr(i int) string     { return fmt.Sprintf("%s%d", subnet, i+1) }

// setup creates the bridge and the namespaces; on error it removes what it
// made.
func (x *netns) setup(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			x.teardown(context.WithoutCancel(ctx))
		}
	}()
	br := x.bridge()
	if err := run(ctx, "ip", "link", "add", br, "type", "bridge"); err != nil {
		return fmt.Errorf("create bridge: %w", err)
	}
	// With br_netfilter loaded, bridged frames would go through the host's
	// iptables: keep this bridge out of the host's firewall, so the host's
	// rules neither drop the agents' traffic nor see it.
	if err := run(ctx, "ip", "link", "set", br, "type", "bridge", "nf_call_iptables", "0", "nf_call_ip6tables", "0", "nf_call_arptables", "0"); err != nil {
		x.log.Warn("bridge: cannot turn off nf_call_iptables; host firewall rules apply to it", "bridge", br, "err", err)
	}
	if err := run(ctx, "ip", "link", "set", br, "up"); err != nil {
		return fmt.Errorf("bridge up: %w", err)
	}
	for i := range x.n {
		ns, hv := x.ns(i), x.hostVeth(i)
		steps := [][]string{
			{"netns", "add", ns},
			{"link", "add", hv, "type", "veth", "peer", "name", "eth0", "netns", ns},
			{"link", "set", hv, "master", br, "up"},
			{"-n", ns, "addr", "add", x.addr(i) + "/24", "dev", "eth0"},
			{"-n", ns, "link", "set", "eth0", "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		}
		for _, s := range steps {
			if err := run(ctx, "ip", s...); err != nil {
				return fmt.Errorf("namespace %s: %w", ns, err)
			}
		}
		// A fresh table per namespace: the faults replace its rules.
		if err := x.setBlocks(ctx, i, nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// setLink sets agent i's link up or down.
func (x *netns) setLink(ctx context.Context, i int, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	if err := run(ctx, "ip", "-n", x.ns(i), "link", "set", "eth0", state); err != nil {
		return fmt.Errorf("link of agent %d %s: %w", i, state, err)
	}
	return nil
}

// setBlocks replaces agent i's drop rules: packets from the agents in
// inFrom and to the agents in outTo are dropped inside its namespace. It
// clears any random loss.
func (x *netns) setBlocks(ctx context.Context, i int, inFrom, outTo []int) error {
	return x.setRules(ctx, i, inFrom, outTo, 0)
}

// setLoss replaces agent i's drop rules with one dropping percent of the
// packets its eth0 sends and receives, at random.
func (x *netns) setLoss(ctx context.Context, i, percent int) error {
	if percent < 1 || percent > 99 {
		return fmt.Errorf("loss of agent %d: percent %d: want 1 to 99", i, percent)
	}
	return x.setRules(ctx, i, nil, nil, percent)
}

// setRules writes agent i's one nftables table: the drops of setBlocks and
// lossPercent of random loss (0 for none). The counters let a test see the
// rules work.
func (x *netns) setRules(ctx context.Context, i int, inFrom, outTo []int, lossPercent int) error {
	var b strings.Builder
	// "table; delete table" makes the script work whether or not the table
	// exists yet.
	fmt.Fprintf(&b, "table inet shoalchaos\ndelete table inet shoalchaos\ntable inet shoalchaos {\n")
	b.WriteString("\tchain in {\n\t\ttype filter hook input priority 0; policy accept;\n")
	if len(inFrom) > 0 {
		fmt.Fprintf(&b, "\t\tip saddr { %s } drop\n", x.addrList(inFrom))
	}
	if lossPercent > 0 {
		fmt.Fprintf(&b, "\t\tiifname \"eth0\" numgen random mod 100 < %d counter drop\n", lossPercent)
	}
	b.WriteString("\t}\n\tchain out {\n\t\ttype filter hook output priority 0; policy accept;\n")
	if len(outTo) > 0 {
		fmt.Fprintf(&b, "\t\tip daddr { %s } drop\n", x.addrList(outTo))
	}
	if lossPercent > 0 {
		fmt.Fprintf(&b, "\t\toifname \"eth0\" numgen random mod 100 < %d counter drop\n", lossPercent)
	}
	b.WriteString("\t}\n}\n")
	if err := runInput(ctx, b.String(), "ip", "netns", "exec", x.ns(i), "nft", "-f", "-"); err != nil {
		return fmt.Errorf("nftables rules of agent %d: %w", i, err)
	}
	return nil
}

// tbfBurst is the bucket of a slow link: a few full-size packets, so the
// rate holds from the first second.
const tbfBurst = "8kb"

// setSlow limits agent i's link to rateKbit in both directions: a tbf
// queue on its eth0 (what it sends) and one on the host end of its veth
// (what it receives). latency is how long a queue holds a packet before
// dropping it.
func (x *netns) setSlow(ctx context.Context, i, rateKbit int, latency time.Duration) error {
	if rateKbit < 1 {
		return fmt.Errorf("slow link of agent %d: rate %d kbit: want at least 1", i, rateKbit)
	}
	if latency < time.Millisecond {
		return fmt.Errorf("slow link of agent %d: latency %s: want at least 1ms", i, latency)
	}
	tbf := []string{"qdisc", "replace", "dev", "", "root", "tbf", "rate", fmt.Sprintf("%dkbit", rateKbit),
		"burst", tbfBurst, "latency", fmt.Sprintf("%dms", latency.Milliseconds())}
	for _, d := range x.slowDevs(i) {
		tbf[3] = d.dev
		if err := run(ctx, d.prefix[0], append(d.prefix[1:], tbf...)...); err != nil {
			return fmt.Errorf("slow link of agent %d: %w", i, err)
		}
	}
	return nil
}

// clearSlow removes the tbf queues setSlow made on agent i's link, if any.
func (x *netns) clearSlow(ctx context.Context, i int) error {
	var errs []error
	for _, d := range x.slowDevs(i) {
		out, err := output(ctx, d.prefix[0], append(d.prefix[1:], "qdisc", "show", "dev", d.dev, "root")...)
		if err != nil {
			errs = append(errs, fmt.Errorf("slow link of agent %d: %w", i, err))
			continue
		}
		if !strings.Contains(out, "qdisc tbf ") {
			continue
		}
		if err := run(ctx, d.prefix[0], append(d.prefix[1:], "qdisc", "del", "dev", d.dev, "root")...); err != nil {
			errs = append(errs, fmt.Errorf("heal slow link of agent %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// slowDev is a device a slow link shapes and the command prefix that runs
// tc where it lives.
type slowDev struct {
	prefix []string
	dev    string
}

func (x *netns) slowDevs(i int) []slowDev {
	return []slowDev{
		{[]string{"ip", "netns", "exec", x.ns(i), "tc"}, "eth0"},
		{[]string{"tc"}, x.hostVeth(i)},
	}
}

func (x *netns) addrList(idx []int) string {
	var parts []string
	for _, j := range idx {
		parts = append(parts, x.addr(j))
	}
	return strings.Join(parts, ", ")
}

// teardown removes the namespaces (killing any process left inside) and
// the bridge. It goes on past errors and returns them all.
func (x *netns) teardown(ctx context.Context) error {
	var errs []error
	for i := range x.n {
		if err := removeNetns(ctx, x.ns(i)); err != nil {
			errs = append(errs, err)
		}
	}
	if linkExists(x.bridge()) {
		if err := run(ctx, "ip", "link", "del", x.bridge()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func linkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}

func netnsExists(name string) bool {
	_, err := os.Stat("/run/netns/" + name)
	return err == nil
}

// removeNetns kills every process in namespace name and deletes it.
func removeNetns(ctx context.Context, name string) error {
	if !netnsExists(name) {
		return nil
	}
	if out, err := output(ctx, "ip", "netns", "pids", name); err == nil {
		for _, f := range strings.Fields(out) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGCONT)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if err := run(ctx, "ip", "netns", "del", name); err != nil {
		return fmt.Errorf("remove namespace %s: %w", name, err)
	}
	return nil
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// RemoveLeftovers removes the namespaces and links that runs of crashed
// processes left behind (named with the harness's prefix and a pid that
// is gone). It returns what it removed.
func RemoveLeftovers(ctx context.Context) ([]string, error) {
	var names []string
	if out, err := output(ctx, "ip", "netns", "list"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				names = append(names, f[0])
			}
		}
	}
	entries, _ := os.ReadDir("/sys/class/net")
	for _, e := range entries {
		names = append(names, e.Name())
	}
	var removed []string
	var errs []error
	for _, name := range names {
		m := leftoverName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, err := strconv.ParseInt(m[1], 36, 64)
		if err != nil || alive(int(pid)) {
			continue
		}
		var rerr error
		switch {
		case strings.HasPrefix(m[2], "n"):
			rerr = removeNetns(ctx, name)
		case linkExists(name):
			rerr = run(ctx, "ip", "link", "del", name)
		default:
			continue // went with its namespace
		}
		if rerr != nil {
			errs = append(errs, rerr)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}
