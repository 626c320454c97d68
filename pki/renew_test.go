package pki

import (
	"context"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRenewNext(t *testing.T) {
	day := 24 * time.Hour
	for _, tt := range []struct {
		life, age time.Duration
		renew     bool
		wait      time.Duration
	}{
		{30 * day, day, false, time.Hour},       // a twentieth of the life is 36 h: an hour at most
		{30 * day, 20 * day, false, time.Hour},  // exactly a third left: not yet
		{30 * day, 20*day + 1, true, time.Hour}, // less than a third left
		{30 * day, 31 * day, true, time.Hour},   // expired: still try
		{time.Hour, 30 * time.Minute, false, 3 * time.Minute},
		{time.Hour, 41 * time.Minute, true, 3 * time.Minute},
		{10 * time.Second, 0, false, time.Second}, // a second at least
	} {
		renew, wait := RenewNext(t0, t0.Add(tt.life), t0.Add(tt.age))
		if renew != tt.renew || wait != tt.wait {
			t.Errorf("RenewNext(life %s, at %s) = %t, %s; want %t, %s", tt.life, tt.age, renew, wait, tt.renew, tt.wait)
		}
	}
}

// renewClock is a Timer stopped at now. After reports each wait on
// waits (the round before it has finished) and ends it when the test
// sends on wake.
type renewClock struct {
	now   time.Time
	waits chan time.Duration
	wake  chan time.Time
}

func (c *renewClock) Now() time.Time { return c.now }

func (c *renewClock) After(d time.Duration) <-chan time.Time {
	c.waits <- d
	return c.wake
}

// caSigner is the leader: it signs with ca at the clock's time, or fails
// with err.
type caSigner struct {
	ca    *CA
	clock *renewClock
	life  time.Duration
	err   error
	calls int
}

func (s *caSigner) SignRenewal(_ context.Context, csr []byte) ([]byte, error) {
	s.calls++
	if s.err != nil {
		return nil, s.err
	}
	req, name, err := ParseCSR(csr)
	if err != nil {
		return nil, err
	}
	c, err := s.ca.SignNode(NodeRequest{Name: name, PublicKey: req.PublicKey, Lifetime: s.life}, s.clock.now)
	if err != nil {
		return nil, err
	}
	return EncodeCert(c), nil
}

// TestRenewerRun runs the renewal loop: a certificate with less than a
// third of its life left is renewed with a new key, in the bundle and in
// the files; the next look is a twentieth of the new life away. A failed
// renewal keeps the certificate and is retried after RenewRetry.
func TestRenewerRun(t *testing.T) {
	const life = 3 * time.Hour
	ca := newCA(t)
	clock := &renewClock{now: t0.Add(150 * time.Minute), waits: make(chan time.Duration), wake: make(chan time.Time)}
	b := &Bundle{CA: ca, roots: x509.NewCertPool(), now: func() time.Time { return clock.now }}
	b.roots.AddCert(ca.Cert)
	if err := b.SetCertificate(nodeCert(t, ca, "n1", life)); err != nil {
		t.Fatal(err)
	}
	old := b.Certificate()
	dir := t.TempDir()
	paths := Paths{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "node.pem"), Key: filepath.Join(dir, "node-key.pem")}
	signer := &caSigner{ca: ca, clock: clock, life: life}
	renewed := 0
	r := Renewer{Bundle: b, Paths: paths, Signer: signer, Renewed: func() { renewed++ },
		Clock: clock, Log: discard}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()

	if d := <-clock.waits; d != life/20 {
		t.Errorf("waits %s after renewing; want %s", d, life/20)
	}
	cur := b.Certificate()
	if signer.calls != 1 || renewed != 1 || cur == old || !cur.Leaf.NotAfter.Equal(clock.now.Add(life)) {
		t.Fatalf("after the first round: %d signs, %d renewed, expires %s; want 1, 1, %s",
			signer.calls, renewed, cur.Leaf.NotAfter, clock.now.Add(life))
	}
	if cur.PrivateKey == old.PrivateKey {
		t.Errorf("renewed with the old key")
	}
	pem, err := os.ReadFile(paths.Cert)
	if err != nil {
		t.Fatal(err)
	}
	if onDisk, err := ParseCerts(pem); err != nil || !onDisk[0].Equal(cur.Leaf) {
		t.Errorf("%s after renewal: %v; want the new certificate", paths.Cert, err)
	}

	signer.err = errors.New("no leader")
	clock.now = clock.now.Add(2*time.Hour + time.Minute)
	clock.wake <- clock.now
	if d := <-clock.waits; d != RenewRetry {
		t.Errorf("waits %s after a failed renewal; want %s", d, RenewRetry)
	}
	if signer.calls != 2 || renewed != 1 || b.Certificate() != cur {
		t.Errorf("after a failed renewal: %d signs, %d renewed, certificate replaced %t; want 2, 1, false",
			signer.calls, renewed, b.Certificate() != cur)
	}
	cancel()
	<-done
}
