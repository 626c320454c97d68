// Package sim replays GPU-cluster job traces in simulated time through
// the placement code the leader runs, to compare queue policies on real
// workloads. It owns the trace loader (the CSV format of
// ../shared/traces/README.md, plain or gzipped), the simulated cluster,
// the discrete-event replay, its metrics, and the schedule and plot
// writers behind `shoal sim`.
//
// It must never read the wall clock or start goroutines: the replay's
// only time is the simulated one, so the same trace, cluster and policy
// always give the same schedule. Only Load reads a file; the writers take
// an io.Writer. Callers that want decisions per second of real time time
// Replay themselves and pass the duration to Summarize.
//
// Contracts and modelling choices that are not obvious:
//
//   - The cluster (Cluster) is Nodes identical nodes of GPUsPerNode GPUs,
//     named n0000, n0001, ... (wider when needed, so names sort in index
//     order), LeafSize consecutive nodes per leaf switch (leaf0000, ...)
//     and LeavesPerSpine consecutive leaves per spine (spine000, ...; 8 by
//     default in `shoal sim`). GPUs report no NVLink or NUMA topology.
//   - A job's request (Cluster.Request): num_nodes and gpus_per_node from
//     the trace when it gives them; else num_gpus <= GPUsPerNode is one
//     node with num_gpus GPUs, and more is ceil(num_gpus/GPUsPerNode)
//     nodes with num_gpus/nodes GPUs each when that divides exactly, else
//     whole nodes (the job then holds, and is counted for, more GPUs than
//     it asked for).
//   - Time limits (Options.Limits): under LimitsExact, the default, each
//     job's limit is its trace duration (at least 1 s, since a zero limit
//     means unlimited), measuring the policies themselves rather than
//     users' estimates. Under LimitsNoisy a job gets the trace's
//     time_limit_s where it has one, else Noisy's user-like overestimate
//     drawn from Options.Seed; a limit is never below the duration, so
//     no job is cut short. Jobs always run exactly their duration.
//   - PolicyQSSF's run-time estimates come from a placement.Predictor
//     fed each job's run time and limit as it ends (users from the
//     trace); no fair-share usage is computed, so every job counts F = 1.
//   - A job that could never fit the simulated cluster (placement.Check
//     fails) is counted as unplaceable with the reason, never dropped.
//   - Jobs are queued in trace order (submit time, then file order), which
//     is their job ID order and so their FIFO priority.
//   - The replay processes every event at one timestamp (completions,
//     then submissions) and then runs one scheduling pass; a job that
//     ends at t frees its GPUs for the pass at t.
package sim
