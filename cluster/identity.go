package cluster

import "github.com/shoal-sched/shoal/slurm"

// Identity is the user a request acts for, as the API established it:
// what the leader's and the worker's decisions look at (ownership, root,
// operators). The API converts its caller to it; nothing here says how
// the user was proven.
type Identity struct {
	User     string
	UID, GID int
	// Proven: the API proved who the user is (socket credentials, a user
	// token, a peer node vouching). An unproven identity owns nothing.
	Proven bool
}

// JobRef is a job as Slurm's commands name it (slurm.JobRef: "12", "12_3"
// or "12_[1-3,7]"), with the text it was given as, for messages.
type JobRef struct {
	slurm.JobRef
	Raw string
}

// ParseJobRef parses s with slurm.ParseJobRef; an error is marked
// ErrInvalid.
func ParseJobRef(s string) (JobRef, error) {
	r, err := slurm.ParseJobRef(s)
	if err != nil {
		return JobRef{}, Mark(ErrInvalid, err)
	}
	return JobRef{JobRef: r, Raw: s}, nil
}
