//go:build planted_doublebook

package agent

import (
	"slices"

	"github.com/shoal-sched/shoal/cluster"
)

// plantedDoubleBook: see planted_doublebook_off.go. Test builds only.
const plantedDoubleBook = true

// plantedHideNewest leaves out of jobs the one whose allocation is the
// newest still holding GPUs: placement then sees its GPUs as free.
func plantedHideNewest(jobs []*cluster.Job) []*cluster.Job {
	newest := -1
	for i, j := range jobs {
		if j.HoldsResources() && (newest < 0 || j.Alloc.Index > jobs[newest].Alloc.Index) {
			newest = i
		}
	}
	if newest < 0 {
		return jobs
	}
	return slices.Delete(slices.Clone(jobs), newest, newest+1)
}
