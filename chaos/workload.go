package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/api"
)

// Workload submits gang jobs through random agents while faults happen,
// retrying each submit with its request id, and cancels some jobs. It
// keeps the history the checker reads.
type Workload struct {
	h    *Harness
	seed uint64
	// ticks, gap and requeue replace the default rank life, pause between
	// submits and share of requeued jobs when set (Config.RankTicks,
	// Config.SubmitGap, Config.Requeue).
	ticks   [2]int
	gap     [2]time.Duration
	requeue float64

	mu       sync.Mutex
	attempts []Attempt
	cancels  []Cancel
}

// NewWorkload returns a workload for h whose choices are drawn from seed.
func NewWorkload(h *Harness, seed uint64) *Workload {
	return &Workload{h: h, seed: seed}
}

// Workload bounds.
const (
	submitters       = 2
	attemptTimeout   = 5 * time.Second
	maxAttempts      = 8
	maxSubmitsPerRun = 10_000
	cancelChance     = 0.15
	requeueChance    = 0.5
)

// Run submits until ctx ends; it returns once every submitter has stopped.
func (w *Workload) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for k := range submitters {
		wg.Go(func() { w.submitter(ctx, k) })
	}
	wg.Wait()
}

// History returns what the workload sent, in the order it was sent.
func (w *Workload) History() ([]Attempt, []Cancel) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Attempt(nil), w.attempts...), append([]Cancel(nil), w.cancels...)
}

func (w *Workload) submitter(ctx context.Context, k int) {
	r := NewRand(w.seed, 100+uint64(k))
	n := len(w.h.Agents)
	gpus := w.h.opts.GPUsPerNode
	for i := 0; i < maxSubmitsPerRun && ctx.Err() == nil; i++ {
		// Mixed gang sizes: mostly small, some spanning most of the cluster.
		nodes := min(n, []int{1, 1, 1, 2, 2, 3, 4}[r.IntN(7)])
		perNode := min(gpus, []int{1, 1, 2, 2, 4, 8}[r.IntN(6)])
		ticks := 3 + r.IntN(13) // 0.6 s to 3 s
		if w.ticks != [2]int{} {
			ticks = w.ticks[0] + r.IntN(w.ticks[1]-w.ticks[0]+1)
		}
		slow := "fast"
		if r.Float64() < 0.3 {
			slow = "slow"
		}
		req := api.SubmitRequest{
			RequestID:    fmt.Sprintf("s%d-w%d-%d", w.seed, k, i),
			Command:      []string{"/bin/sh", "-c", RankScript, "chaos-rank", w.h.RecordDir, strconv.Itoa(ticks), slow},
			WorkDir:      w.h.RecordDir,
			Nodes:        nodes,
			GPUsPerNode:  perNode,
			TasksPerNode: 1,
			// Half the jobs ask to be requeued when they lose a node, so
			// faults exercise requeue and invariant 3 (one live incarnation).
			Requeue: r.Float64() < requeueChance,
		}
		if w.requeue > 0 {
			req.Requeue = r.Float64() < w.requeue
		}
		// The job's name is its request id: the final state then shows
		// which request made each job (invariant 2).
		req.Name = req.RequestID
		id, ok := w.submit(ctx, r, req)
		if ok && r.Float64() < cancelChance {
			if sleep(ctx, time.Duration(r.IntN(2000))*time.Millisecond) != nil {
				return
			}
			w.cancel(ctx, r, id)
		}
		gap := time.Duration(100+r.IntN(700)) * time.Millisecond
		if w.gap != [2]time.Duration{} {
			gap = w.gap[0] + time.Duration(r.Int64N(int64(w.gap[1]-w.gap[0])))
		}
		if sleep(ctx, gap) != nil {
			return
		}
	}
}

// submit sends req through random agents until one acknowledges it or
// refuses it, or attempts run out. Each attempt is recorded.
func (w *Workload) submit(ctx context.Context, r *rand.Rand, req api.SubmitRequest) (uint64, bool) {
	backoff := 200 * time.Millisecond
	for range maxAttempts {
		a := w.h.Agents[r.IntN(len(w.h.Agents))]
		at := Attempt{RequestID: req.RequestID, Node: a.Name, Start: time.Now()}
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		resp, err := a.Client().Submit(actx, req, 0)
		cancel()
		at.End = time.Now()
		var se *api.StatusError
		switch {
		case err == nil:
			at.Outcome, at.Job, at.Duplicate = Acked, resp.ID, resp.Duplicate
		case errors.As(err, &se) && se.Code >= 400 && se.Code < 500 && se.Code != http.StatusRequestTimeout:
			at.Outcome, at.Err = Refused, err.Error()
		default:
			at.Outcome, at.Err = Unknown, err.Error()
		}
		w.mu.Lock()
		w.attempts = append(w.attempts, at)
		w.mu.Unlock()
		if at.Outcome != Unknown || ctx.Err() != nil {
			return at.Job, at.Outcome == Acked
		}
		if sleep(ctx, backoff) != nil {
			return 0, false
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	return 0, false
}

// cancel cancels job id through a random agent, once.
func (w *Workload) cancel(ctx context.Context, r *rand.Rand, id uint64) {
	a := w.h.Agents[r.IntN(len(w.h.Agents))]
	c := Cancel{Job: id, Node: a.Name, Start: time.Now()}
	cctx, done := context.WithTimeout(ctx, attemptTimeout)
	err := a.Client().Cancel(cctx, id)
	done()
	c.End = time.Now()
	if err != nil {
		c.Err = err.Error()
	}
	w.mu.Lock()
	w.cancels = append(w.cancels, c)
	w.mu.Unlock()
}
