package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// BcastFile is where and how PUT /v1/jobs/{id}/bcast writes the file it
// carries on one node of the job's allocation (sbcast).
type BcastFile struct {
	// Node is the node of the job's allocation to write it on.
	Node string
	// Path is the file's absolute path there; it is written as the job's
	// user.
	Path string
	// Mode is its permission bits.
	Mode uint32
	// Force replaces a file that exists (sbcast -f); without it an
	// existing file is an error.
	Force bool
	// MTime, when set (sbcast -p), is its modification time, in Unix
	// seconds.
	MTime int64
}

// Query is f as the request's query.
func (f BcastFile) Query() url.Values {
	q := url.Values{"node": {f.Node}, "path": {f.Path}, "mode": {strconv.FormatUint(uint64(f.Mode), 8)}}
	if f.Force {
		q.Set("force", "1")
	}
	if f.MTime != 0 {
		q.Set("mtime", strconv.FormatInt(f.MTime, 10))
	}
	return q
}

// ParseBcastFile reads a BcastFile from q, naming the bad field.
func ParseBcastFile(q url.Values) (BcastFile, error) {
	f := BcastFile{Node: q.Get("node"), Path: q.Get("path"), Force: q.Get("force") == "1"}
	if f.Node == "" {
		return f, fmt.Errorf("node: empty, want the node to write the file on")
	}
	if f.Path == "" || f.Path[0] != '/' {
		return f, fmt.Errorf("path %.64q: want an absolute path", f.Path)
	}
	m, err := strconv.ParseUint(q.Get("mode"), 8, 32)
	if err != nil || m > 0o7777 {
		return f, fmt.Errorf("mode %.16q: want octal permission bits", q.Get("mode"))
	}
	f.Mode = uint32(m)
	if v := q.Get("mtime"); v != "" {
		if f.MTime, err = strconv.ParseInt(v, 10, 64); err != nil {
			return f, fmt.Errorf("mtime %.32q: want Unix seconds", v)
		}
	}
	return f, nil
}

// Bcast writes what r holds to file f on a node of job's allocation
// (sbcast): the agent relays it to that node's agent.
func (c *Client) Bcast(ctx context.Context, job uint64, f BcastFile, r io.Reader) error {
	path := fmt.Sprintf("/v1/jobs/%d/bcast?%s", job, f.Query().Encode())
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.base+path, r)
	if err != nil {
		return fmt.Errorf("PUT %s: %w", path, err)
	}
	c.setHeaders(req)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("PUT %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var e Error
	if json.Unmarshal(data, &e) != nil || e.Error == "" {
		e.Error = fmt.Sprintf("PUT %s: %s", path, resp.Status)
	}
	return &StatusError{Code: resp.StatusCode, Message: e.Error, Field: e.Field}
}
