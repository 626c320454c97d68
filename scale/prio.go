package scale

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// lowerPriority sets the nice value of every thread of this process (on
// Linux a nice value is a thread's, and a new thread takes its creator's:
// once all are lowered, so are those the Go runtime starts later, and the
// processes this one starts). nice 0 leaves it as it is.
func lowerPriority(nice int) error {
	if nice == 0 {
		return nil
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("worker priority: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread that ended meanwhile is no error.
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("worker priority: nice %d for thread %d: %w", nice, tid, err)
		}
	}
	return nil
}

// raiseFileLimit raises this process's open-file limit, soft and hard, to
// at least want (root may raise the hard limit; others get the hard
// limit as it is). The agents this process starts inherit it: each agent
// holds ~20 descriptors, and a server one per worker it serves.
func raiseFileLimit(want uint64) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("open-file limit: %w", err)
	}
	if l.Cur >= want {
		return nil
	}
	n := l
	n.Cur, n.Max = want, max(want, l.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n); err != nil {
		// Not root: as far as the hard limit goes.
		n.Cur, n.Max = l.Max, l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n); err != nil {
			return fmt.Errorf("open-file limit %d: %w", l.Max, err)
		}
	}
	return nil
}
