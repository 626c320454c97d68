package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/shoal-sched/shoal/cluster"
)

// Priority is one pending job's multifactor priority as `shoal priority`
// (sprio) shows it: the weighted factors, whose sum less Nice is Priority,
// and the factors themselves, each in [0,1].
type Priority struct {
	Job      uint64  `json:"job"`
	User     string  `json:"user"`
	Account  string  `json:"account"`
	QoSName  string  `json:"qos_name"`
	Priority int64   `json:"priority"`
	Age      float64 `json:"age"`
	Fair     float64 `json:"fair_share"`
	JobSize  float64 `json:"job_size"`
	QoS      float64 `json:"qos"`
	// Partition is the weighted partition factor; PartitionName the job's.
	Partition     float64        `json:"partition"`
	PartitionName string         `json:"partition_name,omitempty"`
	Nice          int            `json:"nice"`
	Factors       PriorityFactor `json:"factors"`
}

// PriorityFactor holds a job's normalised priority factors.
type PriorityFactor struct {
	Age       float64 `json:"age"`
	FairShare float64 `json:"fair_share"`
	JobSize   float64 `json:"job_size"`
	QoS       float64 `json:"qos"`
	Partition float64 `json:"partition"`
}

// PolicyResponse answers GET /v1/policy: the queue policy in force, and
// whether it was set (false: cluster.DefaultPolicy, as no policy was).
type PolicyResponse struct {
	Set    bool               `json:"set"`
	Policy cluster.PolicyFile `json:"policy"`
}

// Priorities returns the pending jobs' priorities, highest first (the
// order the scheduler takes them in); job and user, when not zero, keep
// only that job or that user's jobs.
func (c *Client) Priorities(ctx context.Context, job uint64, user string) ([]Priority, error) {
	q := url.Values{}
	if job != 0 {
		q.Set("job", strconv.FormatUint(job, 10))
	}
	if user != "" {
		q.Set("user", user)
	}
	path := "/v1/priority"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out []Priority
	_, err := c.Do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// Policy returns the queue policy in force.
func (c *Client) Policy(ctx context.Context) (PolicyResponse, error) {
	var out PolicyResponse
	_, err := c.Do(ctx, http.MethodGet, "/v1/policy", nil, &out)
	return out, err
}

// SetPolicy replaces the queue policy. Root only. Idempotent: it
// replaces the whole policy.
func (c *Client) SetPolicy(ctx context.Context, p cluster.PolicyFile) error {
	_, err := c.Write(ctx, Idempotent, http.MethodPost, "/v1/policy", p, nil)
	return err
}

// ShareAssoc is one association of the fair-share tree as sshare shows
// it (GET /v1/fairshare): an account (User empty) or a user in it.
type ShareAssoc struct {
	Account string `json:"account"`
	User    string `json:"user,omitempty"`
	// RawShares are the policy's shares (1 where it lists none);
	// NormShares the share of the cluster.
	RawShares  int64   `json:"raw_shares"`
	NormShares float64 `json:"norm_shares"`
	// RawUsage is the decayed usage in GPU-seconds; EffectvUsage that
	// over everyone's.
	RawUsage     float64 `json:"raw_usage"`
	EffectvUsage float64 `json:"effective_usage"`
	// FairShare is the fair-share factor the association's jobs get.
	FairShare float64 `json:"fair_share"`
}

// FairShare returns the fair-share tree, each account before its users.
func (c *Client) FairShare(ctx context.Context) ([]ShareAssoc, error) {
	var out []ShareAssoc
	_, err := c.Do(ctx, http.MethodGet, "/v1/fairshare", nil, &out)
	return out, err
}
