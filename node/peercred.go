package node

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/user"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/shoal-sched/shoal/api"
)

// caller is who a request acts for, and how we know.
type caller struct {
	api.Identity
	// proven: from SO_PEERCRED, a loopback declaration, or a forwarding
	// node. Writes require it.
	proven bool
	how    string
}

type callerKey struct{}

// peerCredConnContext stores the Unix peer's credentials in the
// connection's context; it is the http.Server's ConnContext.
func peerCredConnContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return ctx
	}
	id := api.Identity{User: userName(int(cred.Uid)), UID: int(cred.Uid), GID: int(cred.Gid)}
	return context.WithValue(ctx, callerKey{}, caller{Identity: id, proven: true, how: "peercred"})
}

// callerOf decides the request's identity.
func callerOf(r *http.Request) caller {
	if c, ok := r.Context().Value(callerKey{}).(caller); ok {
		return c // Unix socket: the kernel told us
	}
	declared, hasDeclared := declaredIdentity(r)
	if !hasDeclared {
		return caller{Identity: api.Identity{User: "nobody", UID: -1, GID: -1}}
	}
	if r.Header.Get(api.HeaderForwardedBy) != "" {
		// A peer agent forwarding what it proved. Until node-to-node TLS,
		// peer agents are trusted on the network they share.
		return caller{Identity: declared, proven: true, how: "forwarded"}
	}
	if isLoopback(r.RemoteAddr) {
		return caller{Identity: declared, proven: true, how: "loopback"}
	}
	return caller{Identity: declared}
}

func declaredIdentity(r *http.Request) (api.Identity, bool) {
	uidS := r.Header.Get(api.HeaderUID)
	if uidS == "" {
		return api.Identity{}, false
	}
	uid, err := strconv.Atoi(uidS)
	if err != nil || uid < 0 {
		return api.Identity{}, false
	}
	gid, err := strconv.Atoi(r.Header.Get(api.HeaderGID))
	if err != nil || gid < 0 {
		gid = uid
	}
	name := r.Header.Get(api.HeaderUser)
	if name == "" {
		name = userName(uid)
	}
	return api.Identity{User: name, UID: uid, GID: gid}, true
}

func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// userName resolves uid to a name, or the number when it has none.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return fmt.Sprint(uid)
}
