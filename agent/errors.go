package agent

import (
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/datadir"
)

// Refusals, marked with their kind (cluster.ErrInvalid and its siblings)
// and no protocol: the HTTP API maps each kind to its status in one table
// (httpapi.Status). The message stays the wrapped error's own.

func invalid(err error) error         { return cluster.Mark(cluster.ErrInvalid, err) }
func unauthenticated(err error) error { return cluster.Mark(cluster.ErrUnauthenticated, err) }
func forbidden(err error) error       { return cluster.Mark(cluster.ErrForbidden, err) }
func conflict(err error) error        { return cluster.Mark(cluster.ErrConflict, err) }
func unavailable(err error) error     { return cluster.Mark(cluster.ErrUnavailable, err) }

// ErrDataDirLocked is returned when another agent holds the data dir.
var ErrDataDirLocked = datadir.ErrLocked
