package pki

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Paths are where a node's TLS material lives.
type Paths struct {
	CA        string // the cluster CA certificate
	CAKey     string // its key, only on nodes that may sign
	Cert      string // this node's certificate (leaf, then the CA)
	Key       string // this node's key; never leaves the node
	GossipKey string // the gossip encryption keyring
}

// DirName is the folder of a data dir that holds its TLS material.
const DirName = "tls"

// DefaultPaths are the files under dataDir/tls.
func DefaultPaths(dataDir string) Paths {
	d := filepath.Join(dataDir, DirName)
	return Paths{
		CA:        filepath.Join(d, "ca.pem"),
		CAKey:     filepath.Join(d, "ca-key.pem"),
		Cert:      filepath.Join(d, "node.pem"),
		Key:       filepath.Join(d, "node-key.pem"),
		GossipKey: filepath.Join(d, "gossip.key"),
	}
}

// HasNode reports whether the node's certificate and key are there.
func (p Paths) HasNode() bool { return exists(p.Cert) && exists(p.Key) && exists(p.CA) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// LoadCA reads the CA certificate and, when its key file exists, the key.
func LoadCA(p Paths) (*CA, error) {
	data, err := os.ReadFile(p.CA)
	if err != nil {
		return nil, fmt.Errorf("read CA certificate: %w", err)
	}
	certs, err := ParseCerts(data)
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", p.CA, err)
	}
	ca := &CA{Cert: certs[0]}
	if !ca.Cert.IsCA {
		return nil, fmt.Errorf("CA certificate %s: not a CA (no CA basic constraint)", p.CA)
	}
	if p.CAKey == "" {
		return ca, nil
	}
	keyPEM, err := readPrivate(p.CAKey)
	if errors.Is(err, fs.ErrNotExist) {
		return ca, nil
	}
	if err != nil {
		return nil, err
	}
	if ca.Key, err = ParseKey(keyPEM); err != nil {
		return nil, fmt.Errorf("CA key %s: %w", p.CAKey, err)
	}
	return ca, nil
}

// LoadBundle reads a node's CA, certificate and key.
func LoadBundle(p Paths) (*Bundle, error) {
	ca, err := LoadCA(p)
	if err != nil {
		return nil, err
	}
	certPEM, err := os.ReadFile(p.Cert)
	if err != nil {
		return nil, fmt.Errorf("read node certificate: %w", err)
	}
	keyPEM, err := readPrivate(p.Key)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("node certificate %s with key %s: %w", p.Cert, p.Key, err)
	}
	b, err := NewBundle(ca, cert)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Cert, err)
	}
	return b, nil
}

// readPrivate reads a key file, refusing one that others can read: a key
// anyone on the node can copy proves nothing.
func readPrivate(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("key %s: mode %#o lets others read it; want 0600 (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	return os.ReadFile(path)
}

// InitCA creates a CA for clusterName and writes its certificate and key.
// It refuses to overwrite an existing CA.
func InitCA(p Paths, clusterName string, now time.Time) (*CA, error) {
	if exists(p.CA) {
		return nil, fmt.Errorf("CA certificate %s already exists; remove it to start a new cluster CA", p.CA)
	}
	ca, err := NewCA(clusterName, now)
	if err != nil {
		return nil, err
	}
	keyPEM, err := EncodeKey(ca.Key)
	if err != nil {
		return nil, err
	}
	if err := writeFile(p.CAKey, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeFile(p.CA, EncodeCert(ca.Cert), 0o644); err != nil {
		return nil, err
	}
	return ca, nil
}

// IssueNodeFiles generates a key for the node named name, signs its
// certificate with ca, and writes both (and the CA certificate) to p. It
// is the operator's path (`shoal tls cert create`) and the first node's;
// a joining node makes its own key and sends only a request.
func IssueNodeFiles(ca *CA, p Paths, name string, ips []net.IP, lifetime time.Duration, now time.Time) (*Bundle, error) {
	key, err := NewNodeKey()
	if err != nil {
		return nil, err
	}
	cert, err := ca.SignNode(NodeRequest{Name: name, PublicKey: &key.PublicKey, IPs: ips, Lifetime: lifetime}, now)
	if err != nil {
		return nil, err
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	if err := WriteNode(p, ca, EncodeCert(cert), keyPEM); err != nil {
		return nil, err
	}
	return LoadBundle(p)
}

// WriteNode writes a node's certificate (followed by the CA's), its key
// (mode 0600) and the CA certificate, each file replaced atomically.
func WriteNode(p Paths, ca *CA, certPEM, keyPEM []byte) error {
	if err := writeFile(p.Key, keyPEM, 0o600); err != nil {
		return err
	}
	chain := append(append([]byte{}, certPEM...), EncodeCert(ca.Cert)...)
	if err := writeFile(p.Cert, chain, 0o644); err != nil {
		return err
	}
	if !exists(p.CA) {
		return writeFile(p.CA, EncodeCert(ca.Cert), 0o644)
	}
	return nil
}

// GossipKeyLen is the size of a gossip key: AES-256.
const GossipKeyLen = 32

// NewGossipKey returns a random gossip encryption key.
func NewGossipKey() ([]byte, error) {
	k := make([]byte, GossipKeyLen)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("gossip key: %w", err)
	}
	return k, nil
}

// EncodeGossipKey is a key as users see and paste it: standard base64.
func EncodeGossipKey(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// ParseGossipKey decodes a base64 gossip key and checks its length.
func ParseGossipKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("gossip key: not base64: %w", err)
	}
	switch len(k) {
	case 16, 24, 32: // AES-128, -192, -256, as memberlist takes them
	default:
		return nil, fmt.Errorf("gossip key of %d bytes: want 16, 24 or 32", len(k))
	}
	return k, nil
}

// WriteGossipKey writes a gossip key file (mode 0600).
func WriteGossipKey(path string, k []byte) error { return WriteGossipKeys(path, [][]byte{k}) }

// WriteGossipKeys writes a gossip keyring file (mode 0600): one key a
// line, the primary first.
func WriteGossipKeys(path string, keys [][]byte) error {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(EncodeGossipKey(k) + "\n")
	}
	return writeFile(path, []byte(b.String()), 0o600)
}

// LoadGossipKey reads a gossip key file's primary key.
func LoadGossipKey(path string) ([]byte, error) {
	keys, err := LoadGossipKeys(path)
	if err != nil {
		return nil, err
	}
	return keys[0], nil
}

// LoadGossipKeys reads a gossip keyring file: one base64 key a line, the
// primary first.
func LoadGossipKeys(path string) ([][]byte, error) {
	data, err := readPrivate(path)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, err := ParseGossipKey(line)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no key", path)
	}
	return keys, nil
}

// writeFile writes data to path through a temporary file and a rename, so
// a crash leaves the old file or the new one, never half of either.
func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // after a successful rename this fails harmlessly
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
