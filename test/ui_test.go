package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// artifactDir is where tests keep what a person should look at after CI
// (SHOAL_ARTIFACTS, set by .ci/run; else a temp dir).
func artifactDir(t *testing.T) string {
	dir := os.Getenv("SHOAL_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestWebView (issue 16) loads the agents' /ui in headless Chromium with a
// user token and checks what the page shows: the nodes under their
// switches, a running job's GPUs coloured as its, a pending job with its
// reason, raft and gossip membership, and a job's page with its
// placement, output and GPU use over time. Without a token the page asks
// for one. It keeps screenshots of the overview and the job's page.
func TestWebView(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2, LeafSize: 2,
		ExtraArgs: []string{"--sim-gpu-load", "40", "--gpu-sample-interval", "200ms", "--gpu-report-interval", "500ms"}})
	tok := userToken(t, c.Agents[0], "root")
	running := submit(t, c.Agents[0], "--name", "ui-train", "--nodes", "1", "--gpus-per-node", "2",
		"--", "sh", "-c", "echo hello-from-the-view; sleep 300")
	pending := submit(t, c.Agents[0], "--name", "ui-waits", "--nodes", "3", "--gpus-per-node", "2", "--", "true")
	eventually(t, 20*time.Second, "one job running, one waiting on resources", func() error {
		var j api.Job
		jsonOf(t, c.Agents[0], &j, "job", fmt.Sprint(pending), "--json")
		if j.Reason != "Resources" {
			return fmt.Errorf("job %d reason %q", pending, j.Reason)
		}
		jsonOf(t, c.Agents[0], &j, "job", fmt.Sprint(running), "--json")
		if j.State != "RUNNING" {
			return fmt.Errorf("job %d %s", running, j.State)
		}
		return nil
	})
	var j api.Job
	jsonOf(t, c.Agents[0], &j, "job", fmt.Sprint(running), "--json")
	eventually(t, 20*time.Second, "the job's output", func() error {
		if r := shoal(t, c.Agents[0], "logs", fmt.Sprint(running)); !strings.Contains(r.stdout, "hello-from-the-view") {
			return fmt.Errorf("logs: %q %q", r.stdout, r.stderr)
		}
		return nil
	})

	// Through another agent than the one the jobs were submitted to.
	base := "https://" + c.Agents[1].HTTPAddr() + "/ui/"
	b := startBrowser(t)
	b.navigate(base + "#token=" + tok.Token)
	b.waitText("the overview", 30*time.Second,
		"spine spine0", "switch leaf0", "ui-train", "ui-waits", "Resources", "PENDING", "RUNNING",
		"Membership", "alive", "leader", c.Agents[0].Name, c.Agents[1].Name, c.Agents[2].Name)
	// The running job's GPUs are drawn as its, on its node.
	if got := b.eval(fmt.Sprintf(`[...document.querySelectorAll('[data-node=%q] [data-job="%d"]')].length`, j.Nodes[0], running)); got != "2" {
		t.Errorf("GPUs of job %d drawn on %s: %s, want 2", running, j.Nodes[0], got)
	}
	if strings.Contains(b.eval("document.documentElement.outerHTML + location.href"), tok.Token) {
		t.Errorf("the token is left in the page or its address")
	}
	png := b.screenshot()
	shot := filepath.Join(artifactDir(t), "ui-overview.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the view: %s (%d bytes)", shot, len(png))

	// Live: a job submitted now appears without a reload (the page's
	// blocking query returns).
	later := submit(t, c.Agents[2], "--name", "ui-later", "--nodes", "3", "--gpus-per-node", "2", "--", "true")
	b.waitText("the new job, live", 30*time.Second, "ui-later")

	// A job's page: its placement and the tail of its output.
	b.navigate(fmt.Sprintf("%s#/job/%d", base, running))
	b.waitText("the job's page", 30*time.Second, "ui-train", "Placement", j.Nodes[0], "hello-from-the-view")
	// Its GPU use: the recorded mean and peak, and the node's samples
	// over time drawn as a line (redrawn while the job runs).
	b.waitText("the job's GPU use", 30*time.Second, "GPU utilization", "Peak memory", "40%", "65536 MiB")
	eventually(t, 30*time.Second, "a chart of the job's GPU use", func() error {
		if got := b.eval(`[...document.querySelectorAll("svg.gpu-chart polyline")].map(p => p.getAttribute("points").split(" ").length).join(",")`); got == "" || got == "1" {
			return fmt.Errorf("charts' points: %q, want a line of two points or more", got)
		}
		return nil
	})
	png = b.screenshot()
	if err := os.WriteFile(filepath.Join(artifactDir(t), "ui-job.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	mustShoal(t, c.Agents[0], "cancel", fmt.Sprint(later))

	// Without a token: a sign-in, no data.
	b.eval("sessionStorage.clear()")
	b.navigate(base + "#/")
	b.eval("location.reload()")
	text := b.waitText("the sign-in", 30*time.Second, "needs a user token")
	if strings.Contains(text, "ui-train") {
		t.Errorf("without a token the page shows jobs:\n%s", text)
	}
}
