package pki

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// User tokens are how a user proves who they are to an agent they reach
// over the network (Slurm's auth/jwt and `scontrol token`): a JWT signed
// with the cluster's token key (HS256), naming the user, their uid and gid,
// an id (for revocation) and an expiry. Root issues them.

// Bounds of user tokens.
const (
	// TokenKeyLen is the size of the cluster's token signing key.
	TokenKeyLen = 32
	// MaxUserTokenTTL bounds a user token's life.
	MaxUserTokenTTL = 366 * 24 * time.Hour
	// maxUserTokenBytes bounds a token read from a request.
	maxUserTokenBytes = 4096
	tokenIssuer       = "shoal"
)

// ErrUserToken is a user token that does not verify: malformed, signed
// with another key, expired or not yet valid.
var ErrUserToken = errors.New("user token is not valid")

// UserClaims are what a user token says.
type UserClaims struct {
	User string `json:"user"`
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	jwt.RegisteredClaims
}

// NewTokenKey returns a random token signing key.
func NewTokenKey() ([]byte, error) {
	k := make([]byte, TokenKeyLen)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("token key: %w", err)
	}
	return k, nil
}

// IssueUserToken signs a token for user (uid, gid) valid from now for ttl,
// and returns it with its id.
func IssueUserToken(key []byte, user string, uid, gid int, now time.Time, ttl time.Duration) (token, id string, err error) {
	if len(key) != TokenKeyLen {
		return "", "", fmt.Errorf("token key: %d bytes, want %d", len(key), TokenKeyLen)
	}
	if user == "" || uid < 0 || gid < 0 {
		return "", "", fmt.Errorf("user token for %q (uid %d, gid %d): want a user with a uid and gid", user, uid, gid)
	}
	if ttl <= 0 || ttl > MaxUserTokenTTL {
		return "", "", fmt.Errorf("user token lifetime %s: want up to %s", ttl, MaxUserTokenTTL)
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("token id: %w", err)
	}
	id = hex.EncodeToString(b)
	claims := UserClaims{User: user, UID: uid, GID: gid, RegisteredClaims: jwt.RegisteredClaims{
		Issuer: tokenIssuer, Subject: user, ID: id,
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-clockSkew)),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	token, err = jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
	if err != nil {
		return "", "", fmt.Errorf("sign user token: %w", err)
	}
	return token, id, nil
}

// VerifyUserToken checks a token's signature (HS256 only: a token cannot
// choose its own algorithm), issuer, expiry and claims at now.
func VerifyUserToken(key []byte, token string, now time.Time) (UserClaims, error) {
	var c UserClaims
	if len(token) > maxUserTokenBytes {
		return c, fmt.Errorf("%w: %d bytes long", ErrUserToken, len(token))
	}
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(tokenIssuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if err != nil {
		return UserClaims{}, fmt.Errorf("%w: %w", ErrUserToken, err)
	}
	if c.User == "" || c.UID < 0 || c.GID < 0 || c.ID == "" {
		return UserClaims{}, fmt.Errorf("%w: incomplete claims", ErrUserToken)
	}
	return c, nil
}
