package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/slurm"
)

// shimNames are the names the agent puts on a batch script's and a
// step's PATH, as links to its own binary: every Slurm command Shoal
// plays (slurm.Commands), and shoal itself (for shoal step).
func shimNames() []string {
	names := []string{"shoal"}
	for _, c := range slurm.Commands {
		names = append(names, string(c))
	}
	return names
}

// makeShimDir links the Slurm command names under the data dir to the
// small shoal-slurm beside this agent's binary when it is installed
// (slurm.ShimTarget: it starts faster), else to this binary, and shoal to
// this binary, so scripts call Shoal's srun with no change.
func makeShimDir(dataDir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own binary: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return "", fmt.Errorf("find own binary: %w", err)
	}
	dir := filepath.Join(dataDir, "shims")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("shim dir %s: %w", dir, err)
	}
	// Ranks run as their users: the dir must be searchable by them.
	_ = os.Chmod(dir, 0o755)
	shimTarget := slurm.ShimTarget(self)
	for _, n := range shimNames() {
		link := filepath.Join(dir, n)
		target := shimTarget
		if n == "shoal" {
			target = self
		}
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return "", fmt.Errorf("shim %s: %w", link, err)
		}
	}
	return dir, nil
}

func (a *Agent) handleStartStep(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	var req api.StepRequest
	who, here := a.http.AcceptWrite(w, r, &req)
	if !here {
		return
	}
	step, err := a.leaderStartStep(r.Context(), id, req, who)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), api.StepResponse{Step: step})
}

// leaderStartStep starts an srun step for its job's owner (or root).
func (a *Agent) leaderStartStep(ctx context.Context, id cluster.JobID, req api.StepRequest, who caller) (int, error) {
	j, ok := a.state.View().Job(id)
	if !ok {
		return 0, notFound(fmt.Errorf("job %d: no such job", id))
	}
	if who.UID != 0 && who.UID != j.Spec.UID {
		return 0, forbidden(fmt.Errorf("start a step in job %d: %w: it belongs to %s", id, ErrForbidden, j.Spec.User))
	}
	inc := req.Incarnation
	if inc == 0 {
		inc = j.Incarnation // a caller outside the job's environment: its current run
	}
	res, err := a.apply(ctx, fsm.CmdStartStep, fsm.StartStep{Job: id, Incarnation: inc, Spec: req.Spec, Time: time.Now()})
	if err != nil {
		return 0, err
	}
	if res.Err != nil {
		if errors.Is(res.Err, fsm.ErrUnknownJob) {
			return 0, notFound(res.Err)
		}
		return 0, invalid(res.Err)
	}
	a.log.Info("step started", "job", uint64(id), "step", res.StepID, "by", who.User)
	return res.StepID, nil
}

func (a *Agent) handleCancelStep(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	step, err := strconv.Atoi(r.PathValue("step"))
	if err != nil || step < 0 {
		httpapi.WriteError(w, invalid(fmt.Errorf("step %q: want a step id (0, 1, ...)", r.PathValue("step"))))
		return
	}
	who, here := a.http.AcceptWrite(w, r, nil)
	if !here {
		return
	}
	j, ok := a.state.View().Job(id)
	if !ok {
		httpapi.WriteError(w, notFound(fmt.Errorf("job %d: no such job", id)))
		return
	}
	if err := mayTouch(a.state.View(), fmt.Sprintf("cancel step %d of", step), j, who); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	res, err := a.apply(r.Context(), fsm.CmdCancelStep, fsm.CancelStep{Job: id, Step: step, Time: time.Now()})
	if err == nil && res.Err != nil {
		err = conflict(res.Err)
	}
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), struct{}{})
}

// logFilter selects which of a job's output files to read, and from
// where: a step (-1 for the job's own tasks, nil for all) and, per
// api.LogKey, the offset already read.
type logFilter struct {
	step *int
	from map[string]int64
}

// parseLogFilter reads ?step=S&from=KEY:OFFSET... .
func parseLogFilter(r *http.Request) (logFilter, error) {
	var f logFilter
	q := r.URL.Query()
	if s := q.Get("step"); s != "" {
		step, err := strconv.Atoi(s)
		if err != nil || step < -1 {
			return f, invalid(fmt.Errorf("step %q: want a step id, or -1 for the job's own tasks", s))
		}
		f.step = &step
	}
	for _, kv := range q["from"] {
		i := strings.LastIndexByte(kv, ':')
		off, err := strconv.ParseInt(kv[i+1:], 10, 64)
		if i < 0 || err != nil || off < 0 {
			return f, invalid(fmt.Errorf("from %q: want NODE/INCARNATION/RANK/STREAM:OFFSET", kv))
		}
		if f.from == nil {
			f.from = map[string]int64{}
		}
		f.from[kv[:i]] = off
	}
	return f, nil
}

// query is parseLogFilter's inverse, for forwarding to a node.
func (f logFilter) query() string {
	q := make([]string, 0, len(f.from)+1)
	if f.step != nil {
		q = append(q, "step="+strconv.Itoa(*f.step))
	}
	for k, off := range f.from {
		q = append(q, "from="+url.QueryEscape(k+":"+strconv.FormatInt(off, 10)))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + strings.Join(q, "&")
}
