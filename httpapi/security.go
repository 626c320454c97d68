package httpapi

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/pki"
)

// Security is the cluster's trust material: root's user and join
// tokens, revocations and the gossip keyring, and what a joining
// machine or a node asks of the leader (a join, a renewal, the CA's
// offer).
type Security interface {
	CreateUserToken(ctx context.Context, req api.UserTokenRequest, who cluster.Identity) (api.UserTokenResponse, error)
	RevokeUserToken(ctx context.Context, req api.RevokeUserTokenRequest, who cluster.Identity) error
	// Keyring is the gossip keyring, the cluster's and this agent's
	// (root only), and the replica's index.
	Keyring(who cluster.Identity) (api.Keyring, uint64, error)
	ChangeKeyring(ctx context.Context, req api.KeyringRequest, who cluster.Identity) (api.Keyring, error)
	CreateJoinToken(ctx context.Context, req api.JoinTokenRequest, who cluster.Identity) (api.JoinTokenResponse, error)
	// CanSign returns nil when this agent signs joins (it runs TLS).
	CanSign() error
	// Join signs a joining node's certificate for a join token (leader).
	Join(ctx context.Context, req api.JoinRequest) (api.JoinResponse, error)
	// Revoke refuses node name's certificates and removes it from raft.
	Revoke(ctx context.Context, name string, who cluster.Identity) error
	// Renew signs node name's next certificate for key (leader).
	Renew(name string, key crypto.PublicKey) (*x509.Certificate, error)
	// RecordClusterCA records a node's offer of the CA (leader).
	RecordClusterCA(ctx context.Context, offer api.ClusterCA) error
}

// HandleCreateUserToken is POST /v1/tokens (shoal token create).
func (s *Server) HandleCreateUserToken(w http.ResponseWriter, r *http.Request) {
	bodyWrite(s, w, r, s.Security.CreateUserToken)
}

// HandleRevokeUserToken is POST /v1/tokens/revoke.
func (s *Server) HandleRevokeUserToken(w http.ResponseWriter, r *http.Request) {
	bodyWrite(s, w, r, noAnswer(s.Security.RevokeUserToken))
}

// HandleKeyring is GET /v1/keyring (root only: the keys are secrets).
func (s *Server) HandleKeyring(w http.ResponseWriter, r *http.Request) {
	out, index, err := s.Security.Keyring(CallerOf(r).Who())
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, index, out)
}

// HandleChangeKeyring is POST /v1/keyring (shoal keyring install|use|remove).
func (s *Server) HandleChangeKeyring(w http.ResponseWriter, r *http.Request) {
	bodyWrite(s, w, r, s.Security.ChangeKeyring)
}

// HandleCreateJoinToken is POST /v1/join-tokens (shoal join-token create).
func (s *Server) HandleCreateJoinToken(w http.ResponseWriter, r *http.Request) {
	bodyWrite(s, w, r, s.Security.CreateJoinToken)
}

// HandleJoin is POST /v1/join: anyone may ask (a joining machine has no
// certificate yet): the join token is the proof, checked by the leader.
func (s *Server) HandleJoin(w http.ResponseWriter, r *http.Request) {
	if err := s.Security.CanSign(); err != nil {
		WriteError(w, err)
		return
	}
	var req api.JoinRequest
	if err := DecodeBody(r, &req); err != nil {
		WriteError(w, err)
		return
	}
	if s.Forward(w, r, Caller{Identity: Nobody}, req) {
		return
	}
	out, err := s.Security.Join(r.Context(), req)
	s.writeResult(w, out, err)
}

// HandleRevoke is POST /v1/nodes/{name}/revoke (shoal node revoke).
func (s *Server) HandleRevoke(w http.ResponseWriter, r *http.Request) {
	who, here := s.AcceptWrite(w, r, nil)
	if !here {
		return
	}
	s.writeResult(w, struct{}{}, s.Security.Revoke(r.Context(), r.PathValue("name"), who.Who()))
}

// HandleRenew is POST /v1/internal/renew: a node renews its certificate
// (the CSR names it, and only it may ask), at the leader.
func (s *Server) HandleRenew(w http.ResponseWriter, r *http.Request) {
	var req api.RenewRequest
	if err := DecodeBody(r, &req); err != nil {
		WriteError(w, err)
		return
	}
	csr, name, err := pki.ParseCSR([]byte(req.CSR))
	if err != nil {
		WriteError(w, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("csr: %w", err)))
		return
	}
	if err := s.RequireNode(r, name); err != nil {
		WriteError(w, err)
		return
	}
	if !s.Cluster.IsLeader() {
		WriteError(w, cluster.Mark(cluster.ErrUnavailable, errNotLeader))
		return
	}
	cert, err := s.Security.Renew(name, csr.PublicKey)
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, 0, api.RenewResponse{Cert: string(pki.EncodeCert(cert))})
}

// errNotLeader answers a node's request that reached a follower.
var errNotLeader = errors.New("not the leader")

// HandleClusterCA is POST /v1/internal/cluster-ca: a node that holds the
// CA's key offers it to the leader.
func (s *Server) HandleClusterCA(w http.ResponseWriter, r *http.Request) {
	var offer api.ClusterCA
	if err := DecodeBody(r, &offer); err != nil {
		WriteError(w, err)
		return
	}
	if err := s.RequireNode(r, ""); err != nil {
		WriteError(w, err)
		return
	}
	if !s.Cluster.IsLeader() {
		WriteError(w, cluster.Mark(cluster.ErrUnavailable, errNotLeader))
		return
	}
	s.writeResult(w, struct{}{}, s.Security.RecordClusterCA(r.Context(), offer))
}
