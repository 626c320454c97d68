package pki

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"
)

// Bounds of certificate renewal.
const (
	// renewCheckMax bounds how long the renewal loop waits between looks
	// at its certificate's age, renewCheckMin how short.
	renewCheckMax = time.Hour
	renewCheckMin = time.Second
	// RenewRetry is the wait after a failed renewal.
	RenewRetry = 10 * time.Second
)

// RenewNext is the renewal loop's decision about a certificate issued at
// issued and expiring at notAfter, at now: renew it once a third of its
// life is left (so a leader outage of days still leaves time to retry),
// else look again after wait, a twentieth of its life (between a second
// and an hour).
func RenewNext(issued, notAfter, now time.Time) (renew bool, wait time.Duration) {
	life := notAfter.Sub(issued)
	return notAfter.Sub(now) < life/3, min(max(life/20, renewCheckMin), renewCheckMax)
}

// RenewalSigner is the cluster's leader, local or remote, as the renewal
// loop sees it.
type RenewalSigner interface {
	// SignRenewal returns the certificate (PEM) the cluster CA signs for
	// the certificate request csr (PEM).
	SignRenewal(ctx context.Context, csr []byte) (certPEM []byte, err error)
}

// Timer is the clock a loop reads and waits on.
type Timer interface {
	Now() time.Time
	// After delivers once, after d.
	After(d time.Duration) <-chan time.Time
}

// Renewer is an agent's certificate renewal loop: it renews the node's
// certificate before it expires (RenewNext decides when), with a new key
// each time, through the leader. Listeners and clients pick the new
// certificate up at their next handshake; the files follow, so a restart
// uses it.
type Renewer struct {
	// Bundle holds the node's certificate; Renew replaces it.
	Bundle *Bundle
	// Paths are where the node's certificate and key are written.
	Paths  Paths
	Signer RenewalSigner
	// Renewed, when set, is called once a new certificate is in place.
	Renewed func()
	Clock   Timer
	Log     *slog.Logger
}

// Run renews until ctx ends.
func (r Renewer) Run(ctx context.Context) {
	for {
		leaf := r.Bundle.Certificate().Leaf
		renew, wait := RenewNext(IssuedAt(leaf), leaf.NotAfter, r.Clock.Now())
		if renew {
			err := r.Renew(ctx)
			if err == nil {
				continue
			}
			r.Log.Warn("renew this node's certificate", "expires", leaf.NotAfter.Format(time.RFC3339), "err", err)
			wait = RenewRetry
		}
		select {
		case <-ctx.Done():
			return
		case <-r.Clock.After(wait):
		}
	}
}

// Renew gets a new certificate for a new key and puts it in place.
func (r Renewer) Renew(ctx context.Context) error {
	key, err := NewNodeKey()
	if err != nil {
		return err
	}
	csr, err := NewCSR(key, r.Bundle.Name)
	if err != nil {
		return err
	}
	certPEM, err := r.Signer.SignRenewal(ctx, csr)
	if err != nil {
		return err
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("renewed certificate: %w", err)
	}
	if err := r.Bundle.SetCertificate(cert); err != nil {
		return fmt.Errorf("renewed certificate: %w", err)
	}
	if r.Renewed != nil {
		r.Renewed()
	}
	// Were the write to fail, the old files still hold a valid
	// certificate.
	if err := WriteNode(r.Paths, r.Bundle.CA, certPEM, keyPEM); err != nil {
		return err
	}
	r.Log.Info("renewed this node's certificate", "expires", r.Bundle.NotAfter().Format(time.RFC3339))
	return nil
}
