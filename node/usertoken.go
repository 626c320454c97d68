package node

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
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

// handleCreateUserToken is `shoal token create --user U` (root only, as
// Slurm's `scontrol token`): a token for U, whatever asks for it, can act
// only as U; a node cannot ask (it proves no user).
func (a *Agent) handleCreateUserToken(w http.ResponseWriter, r *http.Request) {
	var req api.UserTokenRequest
	who, here := a.http.AcceptWrite(w, r, &req)
	if !here {
		return
	}
	if who.UID != 0 {
		httpapi.WriteError(w, forbidden(fmt.Errorf("create a user token: %w: only root may", ErrForbidden)))
		return
	}
	ttl := time.Duration(req.TTLS) * time.Second
	if ttl == 0 {
		ttl = defaultUserTokenTTL
	}
	key, err := userTokenKey(a.state.View())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	now := time.Now()
	tok, id, err := pki.IssueUserToken(key, req.User, req.UID, req.GID, now, ttl)
	if err != nil {
		httpapi.WriteError(w, invalid(err))
		return
	}
	a.log.Info("issued a user token", "user", req.User, "uid", req.UID, "token", id, "by", who.User, "expires", now.Add(ttl).Format(time.RFC3339))
	httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), api.UserTokenResponse{Token: tok, ID: id, Expires: api.FormatTime(now.Add(ttl))})
}

// handleRevokeUserToken refuses a user token from now until it expires
// (root only).
func (a *Agent) handleRevokeUserToken(w http.ResponseWriter, r *http.Request) {
	var req api.RevokeUserTokenRequest
	who, here := a.http.AcceptWrite(w, r, &req)
	if !here {
		return
	}
	if who.UID != 0 {
		httpapi.WriteError(w, forbidden(fmt.Errorf("revoke a user token: %w: only root may", ErrForbidden)))
		return
	}
	key, err := userTokenKey(a.state.View())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	c, err := pki.VerifyUserToken(key, req.Token, time.Now())
	if errors.Is(err, jwt.ErrTokenExpired) {
		httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), struct{}{}) // refused anyway
		return
	}
	if err != nil {
		httpapi.WriteError(w, invalid(fmt.Errorf("token: %w", err)))
		return
	}
	res, err := a.apply(r.Context(), fsm.CmdRevokeUserToken, fsm.RevokeUserToken{ID: c.ID, Expires: c.ExpiresAt.Time, Time: time.Now()})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		httpapi.WriteError(w, fsmError(err))
		return
	}
	a.log.Warn("revoked a user token", "user", c.User, "token", c.ID, "by", who.User)
	httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), struct{}{})
}
