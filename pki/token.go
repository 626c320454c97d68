package pki

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
)

// JoinToken is what a new node brings to get its certificate: the token's
// id and secret (the cluster keeps only the secret's hash), the
// fingerprint of the cluster CA it must find before it sends anything, and
// the API addresses to ask. Its text form is
//
//	ID.SECRET.CA-SHA256@HOST:PORT[,HOST:PORT...]
//
// so that `shoal agent --join ... --token T` needs nothing else.
type JoinToken struct {
	ID            string
	Secret        string
	CAFingerprint string // hex SHA-256 of the CA certificate
	Addrs         []string
}

// Bounds of a join token's text.
const (
	tokenIDLen      = 8  // hex characters
	tokenSecretLen  = 32 // hex characters: 128 bits
	maxTokenText    = 2048
	maxTokenAddrs   = 16
	fingerprintHexs = 64
)

// ErrBadToken is a join token whose text is malformed.
var ErrBadToken = errors.New("malformed join token: want ID.SECRET.CA-SHA256@HOST:PORT[,HOST:PORT...] as 'shoal join-token create' prints it")

// NewJoinToken makes a token with a fresh random id and secret.
func NewJoinToken(caFingerprint string, addrs []string) (JoinToken, error) {
	b := make([]byte, tokenIDLen/2+tokenSecretLen/2)
	if _, err := rand.Read(b); err != nil {
		return JoinToken{}, fmt.Errorf("join token: %w", err)
	}
	return JoinToken{
		ID:            hex.EncodeToString(b[:tokenIDLen/2]),
		Secret:        hex.EncodeToString(b[tokenIDLen/2:]),
		CAFingerprint: caFingerprint,
		Addrs:         addrs,
	}, nil
}

// String is the token's text form.
func (t JoinToken) String() string {
	return t.ID + "." + t.Secret + "." + t.CAFingerprint + "@" + strings.Join(t.Addrs, ",")
}

// SecretHash is what the cluster stores of the secret.
func SecretHash(secret string) []byte {
	h := sha256.Sum256([]byte("shoal join token\x00" + secret))
	return h[:]
}

// ParseJoinToken reads a token's text form.
func ParseJoinToken(s string) (JoinToken, error) {
	s = strings.TrimSpace(s)
	if len(s) > maxTokenText {
		return JoinToken{}, fmt.Errorf("%w (it is %d bytes long)", ErrBadToken, len(s))
	}
	head, addrs, ok := strings.Cut(s, "@")
	if !ok {
		return JoinToken{}, fmt.Errorf("%w (no '@')", ErrBadToken)
	}
	parts := strings.Split(head, ".")
	if len(parts) != 3 {
		return JoinToken{}, fmt.Errorf("%w (want three '.'-separated parts before '@')", ErrBadToken)
	}
	t := JoinToken{ID: parts[0], Secret: parts[1], CAFingerprint: strings.ToLower(parts[2])}
	switch {
	case len(t.ID) != tokenIDLen || !isHex(t.ID):
		return JoinToken{}, fmt.Errorf("%w (id: want %d hex characters)", ErrBadToken, tokenIDLen)
	case len(t.Secret) != tokenSecretLen || !isHex(t.Secret):
		return JoinToken{}, fmt.Errorf("%w (secret: want %d hex characters)", ErrBadToken, tokenSecretLen)
	case len(t.CAFingerprint) != fingerprintHexs || !isHex(t.CAFingerprint):
		return JoinToken{}, fmt.Errorf("%w (CA fingerprint: want %d hex characters)", ErrBadToken, fingerprintHexs)
	}
	for _, a := range strings.Split(addrs, ",") {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" {
			return JoinToken{}, fmt.Errorf("%w (address %q: want HOST:PORT)", ErrBadToken, a)
		}
		t.Addrs = append(t.Addrs, a)
	}
	if len(t.Addrs) > maxTokenAddrs {
		return JoinToken{}, fmt.Errorf("%w (%d addresses, want at most %d)", ErrBadToken, len(t.Addrs), maxTokenAddrs)
	}
	return t, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
