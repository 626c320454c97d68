package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// MaxRequestBody bounds a request body.
const MaxRequestBody = 4 << 20

// WriteJSON answers v as JSON with code and, when index is not 0, the raft
// index it reflects in the X-Shoal-Index header.
func WriteJSON(w http.ResponseWriter, code int, index uint64, v any) {
	w.Header().Set("Content-Type", "application/json")
	if index > 0 {
		w.Header().Set(api.HeaderIndex, strconv.FormatUint(index, 10))
	}
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteRaw answers a JSON body already encoded (as the leader sent it).
func WriteRaw(w http.ResponseWriter, index uint64, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	if index > 0 {
		w.Header().Set(api.HeaderIndex, strconv.FormatUint(index, 10))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// DecodeBody reads a JSON body into v, naming what is wrong with it.
// Unknown fields are refused.
func DecodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, MaxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return cluster.Mark(cluster.ErrInvalid, fmt.Errorf("request body: malformed JSON: %v", err))
	}
	return nil
}
