package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// allreduce is an NCCL-style job without PyTorch: every rank rendezvouses
// at MASTER_ADDR:MASTER_PORT over TCP (rank 0 listens), rank 0 sums the
// ranks' vectors and sends the sum back, and every rank prints it. It
// uses only the contract: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
const allreduce = `import json, os, socket, struct, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
vec = [rank + 1.0, 2.0 * rank, 1.0]

def recvn(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError("peer closed")
        b += c
    return b

def send(s, obj):
    b = json.dumps(obj).encode()
    s.sendall(struct.pack("!I", len(b)) + b)

def recv(s):
    return json.loads(recvn(s, struct.unpack("!I", recvn(s, 4))[0]))

if rank == 0:
    srv = socket.create_server((addr, port))
    srv.settimeout(60)
    conns, total = [], list(vec)
    for _ in range(world - 1):
        c, _ = srv.accept()
        conns.append(c)
        total = [a + b for a, b in zip(total, recv(c))]
    for c in conns:
        send(c, total)
    result = total
else:
    for _ in range(300):
        try:
            s = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            time.sleep(0.2)
    send(s, vec)
    result = recv(s)
print("rank %d/%d node %s allreduce %s" % (rank, world, os.environ["NODE_RANK"], result), flush=True)
`

// TestAllReduce: a 2-node x 2-rank job rendezvouses over TCP through the
// environment contract alone and all-reduces a vector: every rank gets
// the same sum.
func TestAllReduce(t *testing.T) {
	python := requirePython(t)
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2})
	a := c.Agents[1]
	script := filepath.Join(t.TempDir(), "allreduce.py")
	if err := os.WriteFile(script, []byte(allreduce), 0o644); err != nil {
		t.Fatal(err)
	}
	id := submit(t, a, "--name", "allreduce", "--nodes", "2", "--ntasks-per-node", "2", "--gpus-per-node", "2",
		"--", python, script)
	j := waitJob(t, a, id, 60*time.Second)
	logs := mustShoal(t, c.Agents[0], "logs", fmt.Sprint(id))
	if j.State != "COMPLETED" {
		t.Fatalf("job %s exit %d:\n%s", j.State, j.ExitCode, logs)
	}
	var got []string
	for line := range strings.Lines(logs) {
		if i := strings.Index(line, "rank "); i >= 0 && strings.Contains(line, "allreduce") {
			got = append(got, strings.TrimSpace(line[i:]))
		}
	}
	slices.Sort(got)
	var want []string
	for rank := range 4 {
		want = append(want, fmt.Sprintf("rank %d/4 node %d allreduce [10.0, 12.0, 4.0]", rank, rank/2))
	}
	if !slices.Equal(got, want) {
		t.Errorf("ranks said %q; want %q\n%s", got, want, logs)
	}
}

// requirePython returns python3's path: .ci/run installs it, so it is
// missing only on a machine set up by hand, where the test fails saying
// so.
func requirePython(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("needs %s (.ci/run installs it): %v", python, err)
	}
	return python
}
