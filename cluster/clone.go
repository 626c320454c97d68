package cluster

import "slices"

// The deep copies' (Job.Clone, Policy.Clone, ...) shared steps.

// clonePtr returns a pointer to a copy of *p, or nil for nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// cloneEach returns a copy of s whose elements deep then gives copies of
// what they share with s's (the slices they hold).
func cloneEach[T any](s []T, deep func(*T)) []T {
	c := slices.Clone(s)
	for i := range c {
		deep(&c[i])
	}
	return c
}
