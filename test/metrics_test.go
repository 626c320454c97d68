package test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// metricsClient scrapes agents' /metrics over TLS with a user token, as
// Prometheus does.
type metricsClient struct {
	http  *http.Client
	token string
}

func newMetricsClient(t *testing.T, c *localcluster.Cluster, token string) *metricsClient {
	t.Helper()
	pem, err := os.ReadFile(c.CAPaths().CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("cluster CA: no certificate")
	}
	return &metricsClient{
		http:  &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
		token: token,
	}
}

// scrape returns agent a's samples keyed as the exposition writes them:
// `name` or `name{label="value",...}`.
func (m *metricsClient) scrape(a *localcluster.Agent) (map[string]float64, error) {
	req, err := http.NewRequest(http.MethodGet, "https://"+a.HTTPAddr()+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	if m.token != "" {
		req.Header.Set("Authorization", "Bearer "+m.token)
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics on %s: %s: %s", a.Name, resp.Status, body)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("sample %q: %w", line, err)
		}
		out[line[:i]] = v
	}
	return out, nil
}

// metricIs checks one sample's value on agent a.
func (m *metricsClient) metricIs(a *localcluster.Agent, key string, want float64) error {
	s, err := m.scrape(a)
	if err != nil {
		return err
	}
	got, ok := s[key]
	if !ok {
		return fmt.Errorf("%s: %s not exported", a.Name, key)
	}
	if got != want {
		return fmt.Errorf("%s: %s = %v, want %v", a.Name, key, got, want)
	}
	return nil
}

// TestMetrics (issue 16) scrapes a 3-agent cluster's /metrics as a user
// with a token and sees them move: the leader's job gauges as jobs are
// pending and running, a node's allocated GPUs, leader changes after the
// leader is killed, a running job's (simulated) GPU utilization. A TCP scrape without credentials is refused. A real
// Prometheus server (Debian's) scrapes the cluster and answers a PromQL
// query for its GPU count.
func TestMetrics(t *testing.T) {
	// Simulated GPUs held by a job run at 40 %, sampled every 200 ms.
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2,
		ExtraArgs: []string{"--sim-gpu-load", "40", "--gpu-sample-interval", "200ms"}})
	tok := userToken(t, c.Agents[0], "nobody")
	m := newMetricsClient(t, c, tok.Token)
	if _, err := (&metricsClient{http: m.http}).scrape(c.Agents[1]); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("scrape without credentials: %v; want 401", err)
	}

	// Every agent: its node's GPUs; exactly one leads (asked again while
	// a busy box makes the leader step down and another take over).
	eventually(t, 20*time.Second, "every agent exporting its GPUs, one of them leading", func() error {
		leaders := 0
		for _, a := range c.Agents {
			if err := m.metricIs(a, "shoal_node_gpus", 2); err != nil {
				return err
			}
			s, err := m.scrape(a)
			if err != nil {
				return err
			}
			leaders += int(s["shoal_raft_leader"])
			if s[`shoal_gossip_members{state="alive"}`] != 3 {
				return fmt.Errorf("%s: %v alive members, want 3", a.Name, s[`shoal_gossip_members{state="alive"}`])
			}
		}
		if leaders != 1 {
			return fmt.Errorf("%d agents export shoal_raft_leader 1, want 1", leaders)
		}
		return nil
	})
	li := leaderIndex(t, c, 0)
	leader := c.Agents[li]

	// A job on one whole node runs; one asking for more than the cluster
	// has free waits on resources.
	running := submit(t, c.Agents[0], "--nodes", "1", "--gpus-per-node", "2", "--", "sleep", "300")
	waiting := submit(t, c.Agents[0], "--nodes", "3", "--gpus-per-node", "2", "--", "true")
	eventually(t, 20*time.Second, "the leader counting one running and one pending job", func() error {
		if err := m.metricIs(leader, "shoal_scheduler_jobs_running", 1); err != nil {
			return err
		}
		return m.metricIs(leader, `shoal_scheduler_jobs_pending{reason="Resources"}`, 1)
	})
	var j api.Job
	jsonOf(t, c.Agents[0], &j, "job", fmt.Sprint(running), "--json")
	if len(j.Nodes) != 1 {
		t.Fatalf("job %d nodes %v, want one", running, j.Nodes)
	}
	for _, a := range c.Agents {
		want := 0.0
		if a.Name == j.Nodes[0] {
			want = 2
		}
		if err := m.metricIs(a, "shoal_node_gpus_allocated", want); err != nil {
			t.Error(err)
		}
	}
	// The job's node reports its synthetic load on the job's GPUs and
	// under the job's labels; an idle node's GPUs are idle.
	eventually(t, 20*time.Second, "the job's GPU utilization", func() error {
		for _, a := range c.Agents {
			s, err := m.scrape(a)
			if err != nil {
				return err
			}
			job := fmt.Sprintf(`shoal_job_gpu_utilization_ratio{job="%d",user="root"}`, running)
			want := 0.0
			if a.Name == j.Nodes[0] {
				want = 0.4
				if s[job] != 0.4 {
					return fmt.Errorf("%s: %s = %v, want 0.4", a.Name, job, s[job])
				}
			} else if _, ok := s[job]; ok {
				return fmt.Errorf("%s exports %s, which runs elsewhere", a.Name, job)
			}
			for _, g := range []string{"0", "1"} {
				key := `shoal_node_gpu_utilization_ratio{gpu="` + g + `"}`
				if got, ok := s[key]; !ok || got != want {
					return fmt.Errorf("%s: %s = %v (exported %v), want %v", a.Name, key, got, ok, want)
				}
			}
		}
		return nil
	})
	if s, err := m.scrape(leader); err != nil || s["shoal_scheduler_placements_total"] < 1 || s["shoal_scheduler_submit_to_start_seconds_count"] < 1 {
		t.Errorf("leader's placements %v and submit-to-start count %v (err %v); want at least 1",
			s["shoal_scheduler_placements_total"], s["shoal_scheduler_submit_to_start_seconds_count"], err)
	}
	mustShoal(t, c.Agents[0], "cancel", fmt.Sprint(waiting))

	promQuery(t, c, tok.Token, "sum(shoal_node_gpus)", "6")

	// Kill the leader: the survivors see a new leader elected.
	before := map[int]float64{}
	for i, a := range c.Agents {
		if i == li {
			continue
		}
		s, err := m.scrape(a)
		if err != nil {
			t.Fatal(err)
		}
		before[i] = s["shoal_raft_leader_changes_total"]
	}
	if err := c.Kill(li); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a new leader counted by the survivors", func() error {
		for i, was := range before {
			s, err := m.scrape(c.Agents[i])
			if err != nil {
				return err
			}
			if s["shoal_raft_leader_changes_total"] <= was {
				return fmt.Errorf("%s: leader changes still %v", c.Agents[i].Name, was)
			}
		}
		return nil
	})
}

// promQuery runs Debian's Prometheus against the cluster's agents (TLS
// with the cluster CA, the user token as bearer credentials) and waits
// until query returns want.
func promQuery(t *testing.T, c *localcluster.Cluster, token, query, want string) {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, a := range c.Agents {
		targets = append(targets, fmt.Sprintf("%q", a.HTTPAddr()))
	}
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: shoal
    scheme: https
    authorization:
      credentials_file: %s
    tls_config:
      ca_file: %s
    static_configs:
      - targets: [%s]
`, tokenFile, c.CAPaths().CA, strings.Join(targets, ", "))
	confFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ports, err := localcluster.FreePorts("127.0.0.1", 1)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	cmd := osexec.CommandContext(ctx, "prometheus", "--config.file", confFile, "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", addr)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start prometheus (Debian's prometheus package, installed by .ci/run): %v", err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", out.String())
		}
	}()
	cl := &http.Client{Timeout: 5 * time.Second}
	eventually(t, 60*time.Second, "prometheus answering "+query+" with "+want, func() error {
		resp, err := cl.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(query))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var r struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Value []any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return err
		}
		if r.Status != "success" || len(r.Data.Result) != 1 || len(r.Data.Result[0].Value) != 2 {
			return fmt.Errorf("answer %+v", r)
		}
		if got := fmt.Sprint(r.Data.Result[0].Value[1]); got != want {
			return fmt.Errorf("%s = %s", query, got)
		}
		return nil
	})
}

// TestGPUUsage (issue 16): a job on simulated GPUs at a known synthetic
// load shows that load as its GPU usage: in `shoal job` while it runs
// (the periodic report) and after it ends (with its exit), and in
// sacct's TRESUsageInAve and TRESUsageInMax as Slurm names GPU use, and
// in shoal report.
func TestGPUUsage(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 2,
		ExtraArgs: []string{"--sim-gpu-load", "40", "--gpu-sample-interval", "200ms", "--gpu-report-interval", "500ms"}})
	a := c.Agents[0]
	id := submit(t, a, "--nodes", "2", "--gpus-per-node", "2", "--", "sleep", "8")
	near := func(x, want float64) bool { return math.Abs(x-want) < 1e-9 }
	eventually(t, 20*time.Second, "GPU usage reported while the job runs", func() error {
		var j api.Job
		jsonOf(t, a, &j, "job", fmt.Sprint(id), "--json")
		if j.State != "RUNNING" {
			return fmt.Errorf("job %d %s", id, j.State)
		}
		for _, tk := range j.Tasks {
			if tk.GPUUsage == nil || tk.GPUUsage.Samples == 0 {
				return fmt.Errorf("node %s: no GPU usage yet", tk.Node)
			}
			if !near(tk.GPUUsage.MeanUtil, 0.4) || !near(tk.GPUUsage.PeakUtil, 0.4) {
				return fmt.Errorf("node %s: GPU usage %+v, want 40 %% mean and peak", tk.Node, *tk.GPUUsage)
			}
		}
		return nil
	})
	// Over time (the web view's chart): each node's series, from any agent.
	eventually(t, 20*time.Second, "GPU use over time on both nodes", func() error {
		series, err := c.Agents[1].Client().JobGPU(t.Context(), uint64(id))
		if err != nil {
			return err
		}
		if len(series) != 2 {
			return fmt.Errorf("series %+v, want one per node", series)
		}
		for _, s := range series {
			if s.Error != "" || s.Incarnation != 1 || len(s.Series.Points) < 3 {
				return fmt.Errorf("node %s: %+v, want 3 points or more of incarnation 1", s.Node, s)
			}
			for _, p := range s.Series.Points {
				if !near(p.Util, 0.4) || p.MemBytes != 64<<30 || p.Time.IsZero() {
					return fmt.Errorf("node %s: point %+v, want 40 %% and 64 GiB", s.Node, p)
				}
			}
		}
		return nil
	})
	j := waitJob(t, a, id, 30*time.Second)
	if j.State != "COMPLETED" {
		t.Fatalf("job %d %s", id, j.State)
	}
	// 40 % of an 80 GiB simulated GPU, two GPUs a node.
	wantMem := uint64(64 << 30)
	for _, tk := range j.Tasks {
		if g := tk.GPUUsage; g == nil || !near(g.MeanUtil, 0.4) || g.PeakMemBytes != wantMem || g.Samples < 5 {
			t.Errorf("node %s: GPU usage after the exit %+v; want 40 %% and %d bytes over at least 5 samples", tk.Node, g, wantMem)
		}
	}
	if out := mustShoal(t, a, "job", fmt.Sprint(id)); !strings.Contains(out, "util:mean=40%,peak=40%") {
		t.Errorf("shoal job shows no GPU usage:\n%s", out)
	}
	sh := newSlurmShims(t, a)
	out := sh.must("sacct", "-j", fmt.Sprint(id), "-X", "-n", "-P", "--format=JobID,TRESUsageInAve,TRESUsageInMax")
	cols := strings.Split(out, "|")
	// mem= (the cgroup's count) comes first where the node counted it.
	if len(cols) != 3 || cols[0] != fmt.Sprint(id) ||
		!strings.HasSuffix(cols[1], "gres/gpumem=65536M,gres/gpuutil=40") || !strings.HasSuffix(cols[2], "gres/gpumem=65536M,gres/gpuutil=40") {
		t.Errorf("sacct: %q; want the job's GPU memory (65536M) and utilization (40) in TRESUsageInAve and TRESUsageInMax", out)
	}

	// shoal report: the job's GPU-hours at 40 %, not flagged idle.
	var rep struct {
		GPUHours    float64        `json:"gpu_hours"`
		Utilization float64        `json:"utilization"`
		States      map[string]int `json:"states"`
		Idle        []any          `json:"idle"`
		Users       []struct {
			Name string `json:"name"`
		} `json:"users"`
	}
	jsonOf(t, a, &rep, "report", "--start", "now-1hours", "--json")
	if rep.GPUHours <= 0 || !near(rep.Utilization, 0.4) || rep.States["COMPLETED"] != 1 || len(rep.Idle) != 0 ||
		len(rep.Users) != 1 || rep.Users[0].Name != "root" {
		t.Errorf("shoal report: %+v; want root's GPU-hours at 40 %%, one job completed, none idle", rep)
	}
}
