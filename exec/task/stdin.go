package task

import "net"

// Ranks that read srun's own stdin (srun --input=all, Slurm's default, or
// -i N; Launch.RelayRank) read a pipe whose write end their supervisor
// holds. The supervisor serves StdinSock to one connection, the agent's
// relay of srun (GET /v1/jobs/{id}/stdin): what the connection sends,
// raw, is written to every such rank's pipe of the node, and its end is
// their end of input. A rank that exits, or closes its stdin, is dropped;
// once none is left the supervisor closes the connection, so srun stops
// sending. Nothing is sent back.

// DialStdin connects to the stdin of the ranks of the task in dir.
func DialStdin(dir string) (net.Conn, error) { return dialIn(dir, StdinSock) }

// DialPMIx connects to the fences of the PMIx step whose first node's
// task is in dir (PMIxSock; package pmix has the protocol): what the
// step's other supervisors reach through the agents.
func DialPMIx(dir string) (net.Conn, error) { return dialIn(dir, PMIxSock) }
