package pki

import (
	"context"
	"crypto"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/shoal-sched/shoal/api"
)

// Bounds of a join with a token.
const (
	joinAttempts      = 60
	joinRetryInterval = time.Second
)

// JoinRetries is the join loop's decision about a failed request: try
// again when no address answered or the cluster could not answer yet (it
// may be electing: 502, 503), stop at a refusal or at a server of another
// cluster.
func JoinRetries(err error) bool {
	var se *api.StatusError
	if errors.As(err, &se) {
		return se.Code == http.StatusServiceUnavailable || se.Code == http.StatusBadGateway
	}
	return !errors.Is(err, ErrWrongCluster)
}

// JoinServer is the cluster's API as a node joining with a token reaches
// it.
type JoinServer interface {
	// Join posts req to the API at addr, trusting only a server that
	// proves it holds a certificate of the CA whose fingerprint the token
	// pins.
	Join(ctx context.Context, addr string, req api.JoinRequest) (api.JoinResponse, error)
}

// Joiner gets a node's certificate from the cluster with a join token
// (`--token`): it makes the node's key (which never leaves it), sends a
// certificate request with the token to the API addresses the token
// names, and writes what comes back to Paths once it checks. It retries
// while no address answers (JoinRetries decides), joinAttempts rounds at
// most.
type Joiner struct {
	Token JoinToken
	// Name is the node's, IPs the addresses its certificate names.
	Name   string
	IPs    []string
	Paths  Paths
	Server JoinServer
	Clock  Timer
	Log    *slog.Logger
}

// Run joins, or says why it could not.
func (j Joiner) Run(ctx context.Context) error {
	key, err := NewNodeKey()
	if err != nil {
		return err
	}
	csr, err := NewCSR(key, j.Name)
	if err != nil {
		return err
	}
	req := api.JoinRequest{TokenID: j.Token.ID, Secret: j.Token.Secret, CSR: string(csr), IPs: j.IPs}
	var lastErr error
	for attempt := 0; attempt < joinAttempts; attempt++ {
		for _, addr := range j.Token.Addrs {
			resp, err := j.Server.Join(ctx, addr, req)
			if err == nil {
				return j.save(key, resp)
			}
			lastErr = fmt.Errorf("join through %s: %w", addr, err)
			if !JoinRetries(err) {
				return lastErr
			}
		}
		if attempt == 0 {
			j.Log.Info("waiting for the cluster to sign this node's certificate", "addrs", j.Token.Addrs, "err", lastErr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-j.Clock.After(joinRetryInterval):
		}
	}
	return fmt.Errorf("--token: no address in it answered after %d attempts: %w", joinAttempts, lastErr)
}

// save checks what the cluster sent and writes it.
func (j Joiner) save(key crypto.Signer, resp api.JoinResponse) error {
	cas, err := ParseCerts([]byte(resp.CA))
	if err != nil {
		return fmt.Errorf("join: the CA sent back: %w", err)
	}
	ca := &CA{Cert: cas[0]}
	if ca.Fingerprint() != j.Token.CAFingerprint {
		return fmt.Errorf("join: the CA sent back is not the one the token names")
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair([]byte(resp.Cert), keyPEM)
	if err != nil {
		return fmt.Errorf("join: the certificate sent back: %w", err)
	}
	b, err := NewBundle(ca, cert)
	if err != nil {
		return fmt.Errorf("join: the certificate sent back: %w", err)
	}
	if b.Name != j.Name {
		return fmt.Errorf("join: the certificate sent back names %s, not %s", b.Name, j.Name)
	}
	var gossipKeys [][]byte
	for _, s := range resp.GossipKeys {
		k, err := ParseGossipKey(s)
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
		gossipKeys = append(gossipKeys, k)
	}
	if len(gossipKeys) == 0 {
		return errors.New("join: no gossip key sent back")
	}
	if err := WriteNode(j.Paths, ca, []byte(resp.Cert), keyPEM); err != nil {
		return err
	}
	if err := WriteGossipKeys(j.Paths.GossipKey, gossipKeys); err != nil {
		return err
	}
	j.Log.Info("joined with a token: this node's certificate is signed by the cluster CA", "cert", j.Paths.Cert, "expires", b.NotAfter().Format(time.RFC3339))
	return nil
}
