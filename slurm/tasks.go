package slurm

import (
	"strconv"
	"strings"
)

// TasksPerNode formats per-node task counts, in rank order, as Slurm's
// SLURM_TASKS_PER_NODE: a run of k > 1 equal counts n is "n(xk)", a lone
// count is "n", runs are joined by commas. [2,2] is "2(x2)", [2,1] is
// "2,1", [3,3,1] is "3(x2),1"; no counts give "".
func TasksPerNode(counts []int) string {
	var b strings.Builder
	for i := 0; i < len(counts); {
		j := i + 1
		for j < len(counts) && counts[j] == counts[i] {
			j++
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(counts[i]))
		if j-i > 1 {
			b.WriteString("(x")
			b.WriteString(strconv.Itoa(j - i))
			b.WriteByte(')')
		}
		i = j
	}
	return b.String()
}
