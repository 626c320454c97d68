package placement

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// ErrTaken is wrapped by Start's error when the allocation names a GPU
// another job holds: starting it would double-book (DESIGN invariant 1).
var ErrTaken = errors.New("gpu already taken")

// holdings returns what alloc holds: its unreleased entries on known
// nodes, merged per node, by node index, GPU and CPU positions ascending
// and distinct. Lenient (NewView) skips unknown nodes, out-of-range and
// repeated GPUs; strict (Start) returns an error naming the first one.
// CPUs out of range or repeated are dropped either way (the FSM allows
// neither).
func (v *View) holdings(id cluster.JobID, alloc *cluster.Allocation, strict bool) ([]heldNode, error) {
	var held []heldNode
	for _, na := range alloc.Nodes {
		if na.Released {
			continue
		}
		i, ok := v.byName[na.Node]
		if !ok {
			if strict {
				return nil, fmt.Errorf("job %d: node %q: not in the view", id, na.Node)
			}
			continue
		}
		total := len(v.nodes[i].node.GPUs)
		gpus := make([]int, 0, len(na.GPUs))
		for _, p := range na.GPUs {
			if p >= 0 && p < total {
				gpus = append(gpus, p)
			} else if strict {
				return nil, fmt.Errorf("job %d: node %q: gpu %d: want 0 to %d", id, na.Node, p, total-1)
			}
		}
		var cpus []int
		for _, p := range na.CPUs {
			if p >= 0 && p < v.nodes[i].node.CPUs {
				cpus = append(cpus, p)
			}
		}
		held = append(held, heldNode{node: i, gpus: gpus, cpus: cpus, mem: na.MemMiB})
	}
	slices.SortStableFunc(held, func(a, b heldNode) int { return cmp.Compare(a.node, b.node) })
	out := held[:0]
	for _, h := range held {
		if n := len(out); n > 0 && out[n-1].node == h.node {
			if strict {
				return nil, fmt.Errorf("job %d: node %q: listed twice", id, v.nodes[h.node].node.Name)
			}
			out[n-1].gpus = append(out[n-1].gpus, h.gpus...)
			out[n-1].cpus = append(out[n-1].cpus, h.cpus...)
			out[n-1].mem += h.mem
			continue
		}
		out = append(out, h)
	}
	for k := range out {
		g := out[k].gpus
		slices.Sort(g)
		if c := slices.Compact(g); len(c) != len(g) {
			if strict {
				return nil, fmt.Errorf("job %d: node %q: a gpu listed twice in %v", id, v.nodes[out[k].node].node.Name, g)
			}
			out[k].gpus = c
		}
		slices.Sort(out[k].cpus)
		out[k].cpus = slices.Compact(out[k].cpus)
	}
	return out, nil
}

// Start records that job j now holds what j.Alloc lists (its unreleased
// entries) until StartTime + Request.TimeLimit (for ever without a
// limit), as if NewView had been given j. It is how the simulator keeps
// one View up to date instead of building a new one per event. It checks
// the allocation first and changes nothing on error: an unknown node, a
// GPU out of range or listed twice, a job already holding something, or a
// GPU some other job holds (wrapping ErrTaken). Nodes need not be usable.
// The View keeps j.Alloc's GPU lists; the caller must not change them.
func (v *View) Start(j *cluster.Job) error {
	switch {
	case j == nil:
		return errors.New("start: nil job")
	case j.Alloc == nil:
		return fmt.Errorf("start job %d: no alloc", j.ID)
	}
	if _, ok := v.heldEnd[j.ID]; ok {
		return fmt.Errorf("start job %d: already holds resources", j.ID)
	}
	held, err := v.holdings(j.ID, j.Alloc, true)
	if err != nil {
		return fmt.Errorf("start %w", err)
	}
	if len(held) == 0 {
		return fmt.Errorf("start job %d: alloc holds no node", j.ID)
	}
	for _, h := range held {
		n := &v.nodes[h.node]
		for _, p := range h.gpus {
			if v.words[n.off+p/64]&(1<<(p%64)) == 0 {
				return fmt.Errorf("start job %d: node %q: gpu %d: %w", j.ID, n.node.Name, p, ErrTaken)
			}
		}
	}
	excl := j.Spec.Request.Exclusive
	for _, h := range held {
		n := &v.nodes[h.node]
		for _, p := range h.gpus {
			v.words[n.off+p/64] &^= 1 << (p % 64)
		}
		n.free -= len(h.gpus)
		v.holdCPUsMem(n, h)
		n.jobs++
		if excl {
			n.excl++
		}
	}
	end := expectedEnd(j)
	if v.heldEnd == nil {
		v.heldEnd = make(map[cluster.JobID]time.Time)
	}
	v.heldEnd[j.ID] = end
	at, _ := slices.BinarySearchFunc(v.held, holder{id: j.ID, end: end}, func(a, b holder) int {
		return holderOrder(a.end, a.id, b.end, b.id)
	})
	v.held = slices.Insert(v.held, at, holder{id: j.ID, end: end, nodes: held, excl: excl})
	return nil
}

// Finish frees everything job id holds in the view (recorded by NewView
// or Start), as if its allocation had been released. A GPU that another
// job's allocation also lists (see View.dup) stays taken. It returns an
// error, changing nothing, when the job holds nothing here.
func (v *View) Finish(id cluster.JobID) error {
	end, ok := v.heldEnd[id]
	if !ok {
		return fmt.Errorf("finish job %d: holds nothing in the view", id)
	}
	at, found := slices.BinarySearchFunc(v.held, holder{id: id, end: end}, func(a, b holder) int {
		return holderOrder(a.end, a.id, b.end, b.id)
	})
	if !found {
		return fmt.Errorf("finish job %d: holder record missing", id)
	}
	for _, h := range v.held[at].nodes {
		n := &v.nodes[h.node]
		v.freeCPUsMem(n, h)
		n.jobs--
		if v.held[at].excl {
			n.excl--
		}
		for _, p := range h.gpus {
			slot := n.off*64 + p
			if c := v.dup[slot]; c > 0 {
				if c == 1 {
					delete(v.dup, slot)
				} else {
					v.dup[slot] = c - 1
				}
				continue
			}
			if w := &v.words[n.off+p/64]; *w&(1<<(p%64)) == 0 {
				*w |= 1 << (p % 64)
				n.free++
			}
		}
	}
	v.held = slices.Delete(v.held, at, at+1)
	delete(v.heldEnd, id)
	return nil
}
