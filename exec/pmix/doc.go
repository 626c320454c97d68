// Package pmix is the PMIx server of srun --mpi=pmix: what lets MPI
// ranks started by srun itself, one task per rank with no mpirun, learn
// who they are and find each other, as Slurm's mpi/pmix plugin does
// inside slurmstepd.
//
// # What it owns
//
// One step's PMIx namespace on one node, inside that node's task
// supervisor (package stepd): the supervisor calls Start before it forks
// the ranks, adds Env(local) to each rank's environment, and calls Close
// once the ranks are gone.
//
//   - The namespace (Job, from the Launch alone, so every node derives
//     the same one): "shoal.JOB.INCARNATION.STEP", the step's nodes in
//     step order and each one's ranks; registered with the library as
//     the job-level keys Open MPI reads (sizes, PMIX_NODE_MAP and
//     PMIX_PROC_MAP in PMIx's plain comma/semicolon form, this node's
//     PMIX_LOCAL_PEERS) and each rank's PMIX_PROC_DATA (Infos, pure).
//   - The server (server_pmix.go, cgo against libpmix, behind the pmix
//     build tag; server_stub.go without it fails Start with ErrNotBuilt):
//     PMIx_server_init with its rendezvous socket in a directory of its
//     own owned by the ranks' user, each local rank registered as a
//     client, and PMIx_server_setup_fork's variables for each. The
//     library's key-value store is its plain one (gds hash). The server
//     module answers abort (logged: the rank's exit ends the step as any
//     failed rank does) and fence_nb; the rest (direct modex, publish,
//     spawn, connect, tools) are left to the library, which refuses them.
//   - The fences (Fencer): PMIx calls fence_nb once per fence with this
//     node's data, after its local ranks all entered; the fence completes
//     when every node's data is in, and each node's library gets all of
//     them concatenated in node order. Only fences over the whole
//     namespace are served (MPI_Init's and MPI_Finalize's, PMIx_Fence
//     with no procs), and every fence returns every node's data whether
//     or not it was asked to collect it, so no direct modex is needed.
//
// # The fence exchange
//
// A one-node step's fence is its own data. Otherwise the step's first
// node's supervisor is the Coordinator: it listens on task.PMIxSock in
// its task directory, and the supervisors of the other nodes (Members)
// reach it through the agents: GET /v1/jobs/{id}/pmix?step=S on their
// own agent's Unix socket, which relays to the first node's agent over
// the cluster's mutual TLS (node certificates from the cluster CA, or
// plain TCP where the cluster runs --insecure), which relays to the
// socket. So the exchange is authenticated as the agents' own API is,
// and no supervisor opens a port. A Member connects at its first fence
// (retrying while the first node's supervisor is not up yet), greets with
// its node index and the namespace, and then, for each fence, sends its
// data and reads every node's. The frames are a type byte, the fence's
// sequence number and the payload's length (big endian), then the
// payload (at most 256 MiB).
//
// Every wait is bounded: a fence fails once FenceTimeout (5 minutes, as
// Slurm's PMIx plugin) has passed since its first contribution without
// every node's, a member that cannot reach the coordinator within it
// fails its fence, and a member's connection lost fails every fence from
// then on. A member closed before it reached the coordinator (its node's
// ranks all ended first, as when a rank exits before MPI_Init) still
// reaches it, for 10 seconds at most, and leaves at once, so the other
// nodes' fences fail then rather than after FenceTimeout. A failed fence is answered to the library as an error, which
// the ranks see from PMIx_Fence (Open MPI's MPI_Init then fails and the
// rank exits non-zero), so the step fails instead of hanging.
//
// # What it must never touch
//
// Anything but its own step's ranks and fences: it never signals a
// process, never writes a task record (the supervisor does), and its
// coordinator answers only members that greet it with its own namespace.
package pmix
