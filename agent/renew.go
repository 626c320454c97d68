package agent

import (
	"context"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/internal/clock"
	"github.com/shoal-sched/shoal/pki"
)

// renewer is the certificate renewal loop (pki.Renewer) over this agent:
// it signs through the leader (itself, when it leads) and drops the peer
// clients, which hold the old certificate, once a new one is in place.
func (c *core) renewer() pki.Renewer {
	return pki.Renewer{Bundle: c.sec.bundle, Paths: c.cfg.tlsPaths(), Signer: renewalSigner{c},
		Renewed: c.peers.reset, Clock: clock.Wall{}, Log: c.log}
}

// renewalSigner is pki.RenewalSigner through callLeader.
type renewalSigner struct{ c *core }

func (s renewalSigner) SignRenewal(ctx context.Context, csr []byte) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	resp, err := callLeader(rctx, s.c, "/v1/internal/renew", api.RenewRequest{CSR: string(csr)},
		func(context.Context, api.RenewRequest) (api.RenewResponse, error) {
			req, _, err := pki.ParseCSR(csr)
			if err != nil {
				return api.RenewResponse{}, err
			}
			cert, err := securityAPI{s.c}.Renew(s.c.cfg.Name, req.PublicKey)
			if err != nil {
				return api.RenewResponse{}, err
			}
			return api.RenewResponse{Cert: string(pki.EncodeCert(cert))}, nil
		})
	return []byte(resp.Cert), err
}
