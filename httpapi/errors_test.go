package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// Every refusal answers with the status the API has always given it; the
// outermost mark decides, and marking keeps the message.
func TestStatus(t *testing.T) {
	inner := cluster.Mark(cluster.ErrNotFound, errors.New("job 3: no such job"))
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"plain", errors.New("boom"), http.StatusInternalServerError},
		{"invalid", cluster.Mark(cluster.ErrInvalid, errors.New("x")), http.StatusBadRequest},
		{"unauthenticated", cluster.Mark(cluster.ErrUnauthenticated, errors.New("x")), http.StatusUnauthorized},
		{"forbidden", fmt.Errorf("cancel job 3: %w", cluster.ErrForbidden), http.StatusForbidden},
		{"not found", inner, http.StatusNotFound},
		{"conflict", cluster.Mark(cluster.ErrConflict, errors.New("x")), http.StatusConflict},
		{"limit", cluster.Mark(cluster.ErrLimit, fmt.Errorf("submit: %w", cluster.ErrLimit)), http.StatusTooManyRequests},
		{"upstream", cluster.Mark(ErrUpstream, errors.New("forward to leader: eof")), http.StatusBadGateway},
		{"unavailable", cluster.Mark(cluster.ErrUnavailable, errors.New("x")), http.StatusServiceUnavailable},
		{"not leader", fmt.Errorf("apply: %w", cluster.ErrNotLeader), http.StatusServiceUnavailable},
		{"deadline", fmt.Errorf("apply: %w", context.DeadlineExceeded), http.StatusGatewayTimeout},
		{"forwarded", &api.StatusError{Code: http.StatusTeapot, Message: "x"}, http.StatusTeapot},
		{"outermost wins", cluster.Mark(cluster.ErrInvalid, inner), http.StatusBadRequest},
		{"mark beats forwarded", cluster.Mark(cluster.ErrConflict, &api.StatusError{Code: 418}), http.StatusConflict},
		{"wrapped mark", fmt.Errorf("ctx: %w", inner), http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Status(tt.err); got != tt.want {
				t.Errorf("Status(%v) = %d; want %d", tt.err, got, tt.want)
			}
		})
	}
	if got, want := cluster.Mark(cluster.ErrInvalid, inner).Error(), "job 3: no such job"; got != want {
		t.Errorf("marked message = %q; want %q", got, want)
	}
}
