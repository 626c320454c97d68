// Package chaos runs real Shoal agents under faults and checks that the
// invariants of DESIGN.md ("What must always hold") held.
//
// It has five parts:
//
//   - Harness: N real `shoal agent` processes, each in its own network
//     namespace with its own 10.x address on a bridge the harness creates
//     (veth pairs; the bridge has no address in the host namespace and
//     nothing is routed out), or, without root, on 127.0.x.y loopback
//     addresses with process faults only. The harness always talks to an
//     agent through its Unix socket, which the host namespace reaches
//     whatever a fault did to the agent's network.
//   - Faults: a schedule drawn from a seed (math/rand/v2 PCG), so a run is
//     reproducible by its seed: kill -9 and restart, SIGSTOP/SIGCONT pauses,
//     isolating the leader, minority/majority partitions, one-way drops,
//     flapping links, restarting every node at once, slow links and random
//     loss. Network faults are link state, nftables rules (drops, and
//     `numgen random` loss) inside the agents' namespaces and tc tbf
//     queues on both ends of an agent's veth. This kernel has no tc netem:
//     delay comes from a slow link's tbf queue (a packet waits up to its
//     latency bound) and from pauses, never from a fixed-delay fault.
//   - Workload: gang jobs of mixed sizes submitted through random agents
//     with request ids and retries, and some cancels. Each rank appends
//     records "node gpus job incarnation start_ns end_ns rank kind" to a
//     per-node file in a directory the harness owns.
//   - Check: a pure function over the client history, the rank records and
//     the final state of every replica that reports each violated invariant
//     precisely. An inconclusive check (records or replicas missing, no
//     common applied index) is reported as a violation, never a pass.
//   - Timeline: what a run collected (fault events, leader samples, the
//     rank records and the final state) as an HTML report with an inline
//     SVG (WriteReport) or a PNG (WritePlot).
//
// What it must never do: touch anything outside the namespaces, links and
// processes it created (all named with a per-run prefix and removed when a
// run ends, and by the next run if a crash left them behind), or route
// traffic out of its namespaces.
package chaos
