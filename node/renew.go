package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/pki"
)

// Bounds of certificate renewal.
const (
	// renewCheckMax bounds how long the renewal loop sleeps between looks
	// at its certificate's age.
	renewCheckMax = time.Hour
	// renewRetry is the wait after a failed renewal.
	renewRetry = 10 * time.Second
)

// renewDue reports whether a certificate issued at issued and expiring at
// notAfter should be renewed at now: once a third of its life is left, so
// a leader outage of days still leaves time to retry.
func renewDue(issued, notAfter, now time.Time) bool {
	life := notAfter.Sub(issued)
	return notAfter.Sub(now) < life/3
}

// renewLoop renews this node's certificate before it expires, through the
// leader (or itself, when it leads), with a new key each time; listeners
// and clients pick the new certificate up at their next handshake.
func (a *Agent) renewLoop(ctx context.Context) {
	b := a.sec.bundle
	if b == nil {
		return
	}
	for {
		leaf := b.Certificate().Leaf
		wait := min(renewCheckMax, leaf.NotAfter.Sub(pki.IssuedAt(leaf))/20)
		if renewDue(pki.IssuedAt(leaf), leaf.NotAfter, time.Now()) {
			if err := a.renew(ctx); err != nil {
				a.log.Warn("renew this node's certificate", "expires", leaf.NotAfter.Format(time.RFC3339), "err", err)
				wait = renewRetry
			} else {
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(wait, time.Second)):
		}
	}
}

// renew gets a new certificate for a new key and puts it in place.
func (a *Agent) renew(ctx context.Context) error {
	key, err := pki.NewNodeKey()
	if err != nil {
		return err
	}
	csr, err := pki.NewCSR(key, a.cfg.Name)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	resp, err := callLeader(rctx, a, "/v1/internal/renew", api.RenewRequest{CSR: string(csr)},
		func(context.Context, api.RenewRequest) (api.RenewResponse, error) {
			c, err := a.signRenewal(a.cfg.Name, &key.PublicKey)
			if err != nil {
				return api.RenewResponse{}, err
			}
			return api.RenewResponse{Cert: string(pki.EncodeCert(c))}, nil
		})
	if err != nil {
		return err
	}
	certPEM := []byte(resp.Cert)
	keyPEM, err := pki.EncodeKey(key)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("renewed certificate: %w", err)
	}
	b := a.sec.bundle
	if err := b.SetCertificate(cert); err != nil {
		return fmt.Errorf("renewed certificate: %w", err)
	}
	a.peers.reset()
	// The files follow, so a restart uses the new certificate; were the
	// write to fail, the old files still hold a valid certificate.
	if err := pki.WriteNode(a.cfg.tlsPaths(), b.CA, certPEM, keyPEM); err != nil {
		return err
	}
	a.log.Info("renewed this node's certificate", "expires", b.NotAfter().Format(time.RFC3339))
	return nil
}
