package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/pki"
)

// CreateUserToken is `shoal token create --user U` (leader.UserTokenTerms
// decides who may, with which key and for how long).
func (s securityAPI) CreateUserToken(ctx context.Context, req api.UserTokenRequest, who cluster.Identity) (api.UserTokenResponse, error) {
	key, ttl, err := leader.UserTokenTerms(s.state.View().Security(), req.TTLS, leader.Caller{Identity: who})
	if err != nil {
		return api.UserTokenResponse{}, err
	}
	now := time.Now()
	tok, id, err := pki.IssueUserToken(key, req.User, req.UID, req.GID, now, ttl)
	if err != nil {
		return api.UserTokenResponse{}, invalid(err)
	}
	s.log.Info("issued a user token", "user", req.User, "uid", req.UID, "token", id, "by", who.User, "expires", now.Add(ttl).Format(time.RFC3339))
	return api.UserTokenResponse{Token: tok, ID: id, Expires: api.FormatTime(now.Add(ttl))}, nil
}

// RevokeUserToken refuses a user token from now until it expires
// (leader.RevokeUserTokenKey: root only).
func (s securityAPI) RevokeUserToken(ctx context.Context, req api.RevokeUserTokenRequest, who cluster.Identity) error {
	key, err := leader.RevokeUserTokenKey(s.state.View().Security(), leader.Caller{Identity: who})
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
	res, err := s.apply(ctx, fsm.CmdRevokeUserToken, fsm.RevokeUserToken{ID: c.ID, Expires: c.ExpiresAt.Time, Time: time.Now()})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return fsmError(err)
	}
	s.log.Warn("revoked a user token", "user", c.User, "token", c.ID, "by", who.User)
	return nil
}
