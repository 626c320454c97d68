package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/pki"
)

// defaultUserTokenTTL is a user token's lifetime when none is asked for.
const defaultUserTokenTTL = 24 * time.Hour

// userTokenKey is the cluster's user token key from the replicated state.
func userTokenKey(v *fsm.View) ([]byte, error) {
	sec := v.Security()
	if sec == nil || len(sec.TokenKey) == 0 {
		return nil, conflict(errNoClusterCA)
	}
	return sec.TokenKey, nil
}

// CreateUserToken is `shoal token create --user U` (root only, as
// Slurm's `scontrol token`): a token for U, whatever asks for it, can act
// only as U; a node cannot ask (it proves no user).
func (b apiBackend) CreateUserToken(ctx context.Context, req api.UserTokenRequest, who cluster.Identity) (api.UserTokenResponse, error) {
	if who.UID != 0 {
		return api.UserTokenResponse{}, forbidden(fmt.Errorf("create a user token: %w: only root may", ErrForbidden))
	}
	ttl := time.Duration(req.TTLS) * time.Second
	if ttl == 0 {
		ttl = defaultUserTokenTTL
	}
	key, err := userTokenKey(b.a.state.View())
	if err != nil {
		return api.UserTokenResponse{}, err
	}
	now := time.Now()
	tok, id, err := pki.IssueUserToken(key, req.User, req.UID, req.GID, now, ttl)
	if err != nil {
		return api.UserTokenResponse{}, invalid(err)
	}
	b.a.log.Info("issued a user token", "user", req.User, "uid", req.UID, "token", id, "by", who.User, "expires", now.Add(ttl).Format(time.RFC3339))
	return api.UserTokenResponse{Token: tok, ID: id, Expires: api.FormatTime(now.Add(ttl))}, nil
}

// RevokeUserToken refuses a user token from now until it expires (root
// only).
func (b apiBackend) RevokeUserToken(ctx context.Context, req api.RevokeUserTokenRequest, who cluster.Identity) error {
	if who.UID != 0 {
		return forbidden(fmt.Errorf("revoke a user token: %w: only root may", ErrForbidden))
	}
	key, err := userTokenKey(b.a.state.View())
	if err != nil {
		return err
	}
	c, err := pki.VerifyUserToken(key, req.Token, time.Now())
	if errors.Is(err, jwt.ErrTokenExpired) {
		return nil // refused anyway
	}
	if err != nil {
		return invalid(fmt.Errorf("token: %w", err))
	}
	res, err := b.a.apply(ctx, fsm.CmdRevokeUserToken, fsm.RevokeUserToken{ID: c.ID, Expires: c.ExpiresAt.Time, Time: time.Now()})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return fsmError(err)
	}
	b.a.log.Warn("revoked a user token", "user", c.User, "token", c.ID, "by", who.User)
	return nil
}
