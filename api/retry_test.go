package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Answers an agent gives a write during a leader change.
var (
	errNoLeader = &StatusError{Code: http.StatusServiceUnavailable, Message: NoLeaderMessage + ": the cluster is forming or has lost its quorum; retry"}
	errMoved    = &StatusError{Code: http.StatusServiceUnavailable, Message: LeadershipMovedMessage + "; retry"}
	errNoDial   = &StatusError{Code: http.StatusServiceUnavailable, Message: "forward to leader: " + LeaderUnreachableMessage + ": dial tcp 127.0.0.1:4: connect: connection refused; retry"}
	errLost     = &StatusError{Code: http.StatusServiceUnavailable, Message: "apply cancel-job: not the raft leader (no leader known): leadership lost while committing log"}
	errNoAnswer = &StatusError{Code: http.StatusBadGateway, Message: "forward to leader: POST /v1/jobs/7/signal: EOF"}
	errTimedOut = &StatusError{Code: http.StatusGatewayTimeout, Message: "apply cancel-job: context deadline exceeded"}
	errFinished = &StatusError{Code: http.StatusConflict, Message: "cancel job 7: job already finished (state CANCELLED)"}
)

// TestRetryAfter is the rule of retry.go: any write is sent again after
// an answer proving it was never proposed, only an Idempotent one after
// an answer leaving its outcome unknown, no read and no refusal ever, and
// none past the bounds.
func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		method  string
		r       Repeat
		err     error
		attempt int
		elapsed time.Duration
		want    time.Duration // 0: not sent again
	}{
		{"no leader, once", http.MethodPost, Once, errNoLeader, 1, 0, 25 * time.Millisecond},
		{"moved, once", http.MethodPost, Once, errMoved, 2, 0, 50 * time.Millisecond},
		{"moved, idempotent", http.MethodDelete, Idempotent, errMoved, 3, 0, 100 * time.Millisecond},
		{"leader unreachable, once", http.MethodPost, Once, errNoDial, 1, 0, 25 * time.Millisecond},
		{"lost commit, once", http.MethodPost, Once, errLost, 1, 0, 0},
		{"lost commit, idempotent", http.MethodDelete, Idempotent, errLost, 1, 0, 25 * time.Millisecond},
		{"forward unanswered, once", http.MethodPost, Once, errNoAnswer, 1, 0, 0},
		{"forward unanswered, idempotent", http.MethodPost, Idempotent, errNoAnswer, 1, 0, 25 * time.Millisecond},
		{"commit timed out, idempotent", http.MethodPost, Idempotent, errTimedOut, 1, 0, 25 * time.Millisecond},
		{"refused", http.MethodDelete, Idempotent, errFinished, 1, 0, 0},
		{"transport", http.MethodDelete, Idempotent, errors.New("dial unix /x: connection refused"), 1, 0, 0},
		{"read", http.MethodGet, Idempotent, errNoLeader, 1, 0, 0},
		{"past the wait", http.MethodPost, Idempotent, errMoved, 5, failoverWait - 50*time.Millisecond, 0},
		{"within the wait", http.MethodPost, Idempotent, errMoved, 5, failoverWait - 100*time.Millisecond, 100 * time.Millisecond},
		{"past the count", http.MethodPost, Idempotent, errMoved, failoverAttempts, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, again := retryAfter(tc.method, tc.r, tc.err, tc.attempt, tc.elapsed)
			if again != (tc.want > 0) || got != tc.want {
				t.Errorf("retryAfter(%s, %d, %q, %d, %s) = %s, %v; want %s", tc.method, tc.r, tc.err, tc.attempt, tc.elapsed, got, again, tc.want)
			}
		})
	}
}

// TestWriteAcrossLeaderChange: through a fake agent answering each
// attempt in turn, a write is sent again as TestRetryAfter's rule says, and
// its error says so when it is not, or when an earlier attempt may have
// done what a refusal says is done.
func TestWriteAcrossLeaderChange(t *testing.T) {
	for _, tc := range []struct {
		name    string
		call    func(*Client) error
		answers []error // nil: success
		calls   int32
		wantErr string // "" for success
	}{
		{"cancel after leadership moved", func(c *Client) error { return c.Cancel(context.Background(), 7) },
			[]error{errMoved, errNoLeader, nil}, 3, ""},
		{"cancel after a lost commit", func(c *Client) error { _, err := c.CancelRef(context.Background(), "7"); return err },
			[]error{errNoAnswer, errLost, nil}, 3, ""},
		{"cancel done by the lost attempt", func(c *Client) error { return c.Cancel(context.Background(), 7) },
			[]error{errNoAnswer, errFinished}, 2, "job already finished (state CANCELLED) (an earlier attempt, answered \"forward to leader"},
		{"hold after a timed-out commit", func(c *Client) error { _, err := c.Hold(context.Background(), "7", false); return err },
			[]error{errTimedOut, nil}, 2, ""},
		{"drain after leadership moved", func(c *Client) error { return c.Drain(context.Background(), "n1", "fan") },
			[]error{errMoved, nil}, 2, ""},
		{"signal after leadership moved", func(c *Client) error {
			return c.Signal(context.Background(), 7, SignalRequest{Signal: 10})
		}, []error{errMoved, nil}, 2, ""},
		{"signal after the leader could not be reached", func(c *Client) error {
			return c.Signal(context.Background(), 7, SignalRequest{Signal: 10})
		}, []error{errNoDial, errNoLeader, nil}, 3, ""},
		{"signal with its outcome unknown", func(c *Client) error {
			return c.Signal(context.Background(), 7, SignalRequest{Signal: 10})
		}, []error{errNoAnswer, nil}, 1, "EOF (not sent again: it may have taken effect, and a second copy could act twice)"},
		{"signal with its request id after a lost answer", func(c *Client) error {
			return c.Signal(context.Background(), 7, SignalRequest{Signal: 10, RequestID: "r1"})
		}, []error{errNoAnswer, errTimedOut, nil}, 3, ""},
		{"requeue with its outcome unknown", func(c *Client) error { _, err := c.Requeue(context.Background(), "7", false, ""); return err },
			[]error{errLost, nil}, 1, "not sent again"},
		{"requeue with its request id after a timed-out commit", func(c *Client) error {
			_, err := c.Requeue(context.Background(), "7", true, "r1")
			return err
		}, []error{errTimedOut, nil}, 2, ""},
		{"relative time limit with its outcome unknown", func(c *Client) error {
			add := int64(60)
			_, err := c.UpdateJob(context.Background(), "7", UpdateRequest{TimeLimitAddS: &add})
			return err
		}, []error{errNoAnswer, nil}, 1, "not sent again"},
		{"srun step with its request id after a timed-out commit", func(c *Client) error {
			_, err := c.StartStep(context.Background(), 7, StepRequest{Spec: cluster.StepSpec{Command: []string{"hostname"}}, RequestID: "r1"})
			return err
		}, []error{errTimedOut, errLost, nil}, 3, ""},
		{"srun step without a request id with its outcome unknown", func(c *Client) error {
			_, err := c.StartStep(context.Background(), 7, StepRequest{Spec: cluster.StepSpec{Command: []string{"hostname"}}})
			return err
		}, []error{errTimedOut, nil}, 1, "not sent again"},
		{"relative time limit with its request id after a lost commit", func(c *Client) error {
			add := int64(60)
			_, err := c.UpdateJob(context.Background(), "7", UpdateRequest{TimeLimitAddS: &add, RequestID: "r1"})
			return err
		}, []error{errNoAnswer, nil}, 2, ""},
		{"absolute time limit after a lost commit", func(c *Client) error {
			limit := int64(60)
			_, err := c.UpdateJob(context.Background(), "7", UpdateRequest{TimeLimitS: &limit})
			return err
		}, []error{errNoAnswer, nil}, 2, ""},
		{"forwarding agent", func(c *Client) error {
			_, err := c.Forwarding("n2").Do(context.Background(), http.MethodDelete, "/v1/jobs/7", nil, nil)
			return err
		}, []error{errMoved, nil}, 1, LeadershipMovedMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			c := testClient(t, func(w http.ResponseWriter, r *http.Request) {
				n := int(calls.Add(1))
				if n > len(tc.answers) {
					t.Errorf("attempt %d; want at most %d", n, len(tc.answers))
					n = len(tc.answers)
				}
				writeAnswer(w, tc.answers[n-1])
			})
			err := tc.call(c)
			if got := calls.Load(); got != tc.calls {
				t.Errorf("%d attempts; want %d", got, tc.calls)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %q; want success", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v; want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// TestWriteBounded: an Idempotent write that never meets a leader is sent
// again for failoverWait, no longer, and returns the last answer; on fake
// time, as the bound is the point.
func TestWriteBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		c := &Client{base: "http://agent", header: http.Header{}, http: &http.Client{Transport: roundTrip(func(*http.Request) *http.Response {
			calls.Add(1)
			return answer(errMoved)
		})}}
		start := time.Now()
		err := c.Cancel(context.Background(), 7)
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), LeadershipMovedMessage) {
			t.Errorf("error %v; want the last answer", err)
		}
		if took > failoverWait || took < failoverWait-failoverBackoffMax {
			t.Errorf("gave up after %s; want within %s of %s", took, failoverBackoffMax, failoverWait)
		}
		if n := calls.Load(); n < 2 || n > failoverAttempts {
			t.Errorf("%d attempts; want 2 to %d", n, failoverAttempts)
		}
	})
}

// writeAnswer answers err as an agent does (nil: 200 with an empty JSON
// object).
func writeAnswer(w http.ResponseWriter, err error) {
	var se *StatusError
	if !errors.As(err, &se) {
		w.Write([]byte(`{}`))
		return
	}
	w.WriteHeader(se.Code)
	fmt.Fprintf(w, `{"error": %q}`, se.Message)
}

// answer is writeAnswer's response, for a fake transport.
func answer(err error) *http.Response {
	var se *StatusError
	errors.As(err, &se)
	body := fmt.Sprintf(`{"error": %q}`, se.Message)
	return &http.Response{StatusCode: se.Code, Status: http.StatusText(se.Code), Header: http.Header{},
		Body: io.NopCloser(strings.NewReader(body))}
}

// roundTrip is an http.RoundTripper answering in-process.
type roundTrip func(*http.Request) *http.Response

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r), nil }
