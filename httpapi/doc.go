// Package httpapi is the agent's HTTP API: the rendering of answers as
// JSON with the X-Shoal-Index header, the decoding of request bodies, and
// the one table that maps a refusal (a sentinel error, see
// cluster.ErrInvalid and its siblings) to the status the API answers with.
//
// It owns only HTTP: it knows nothing of scheduling, placement or the
// replicated state machine's rules, and it must never decide anything
// about jobs or nodes. It calls the agent through plain Go values and
// interfaces declared where they are used; the code it calls (the leader's
// and the worker's) returns plain errors wrapped around sentinels and never
// an HTTP type.
//
// Contracts that are not obvious:
//
//   - An error's status is that of the outermost cluster.Mark in its chain;
//     an unmarked error forwarded from the leader (*api.StatusError) keeps
//     the leader's status; any other error is looked up in the table with
//     errors.Is, and what matches nothing is a 500.
//   - The message of an error is sent as it is: marking never changes it.
package httpapi
