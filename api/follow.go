package api

// FollowServer is one raft server as a follow reply names it.
type FollowServer struct {
	Name    string `json:"name"`
	APIAddr string `json:"api_addr"`
	Voter   bool   `json:"voter"`
}

// FollowReply answers GET /v1/internal/follow?node=N&index=I&digest=D&lease=L&wait=W,
// the blocking query a worker (a node outside the raft configuration)
// follows its own allocations with. A server answers once the jobs that
// hold node differ from digest, once it has applied lease while the
// worker's view is behind it (index < lease), or when wait is over. Any
// node answers with the hints (Leader, Servers); only a server with a
// readable replica sets Server and the state.
type FollowReply struct {
	// Server is set when the answering node is a raft server and the rest
	// below is its state; otherwise only the hints are set.
	Server bool `json:"server"`
	// Member says whether the asking node is in the raft configuration:
	// then it reads its own replica instead.
	Member bool `json:"member"`
	// Index is the server's applied index the state is as of.
	Index uint64 `json:"index"`
	// Digest identifies Jobs; the worker passes it back to wait for a
	// change.
	Digest string `json:"digest"`
	// State is msgpack: the jobs holding the node, the nodes of their
	// allocations and the cluster's policy (node's followState).
	State []byte `json:"state,omitempty"`
	// Leader and LeaderAddr name the leader the answering node knows.
	Leader     string `json:"leader,omitempty"`
	LeaderAddr string `json:"leader_addr,omitempty"`
	// Servers are the raft servers with their API addresses.
	Servers []FollowServer `json:"servers,omitempty"`
}
