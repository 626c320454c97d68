package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/pki"
)

// Caller is who a request acts for, and how the API knows.
type Caller struct {
	api.Identity
	// Proven: from SO_PEERCRED, a user token, or vouched for by a peer
	// node that proved it (a forwarded request over mutual TLS). Writes
	// require it.
	Proven bool
	How    string
	// Node is the cluster node the TCP peer proved to be with its
	// certificate; "" for users. Only nodes may call /v1/internal/*, and a
	// node may change only its own records.
	Node string
	// Local: the request came through this agent's Unix socket.
	Local bool
	// AuthErr says why credentials the caller sent were refused (a user
	// token that does not verify), for the 401.
	AuthErr error
}

// Anonymous reports whether nothing about the caller is known: no socket
// credentials, no node certificate, no forwarded identity.
func (c Caller) Anonymous() bool { return !c.Proven && c.Node == "" }

// Nobody is the identity of a caller nothing is known about.
var Nobody = api.Identity{User: "nobody", UID: -1, GID: -1}

// Authority is what authentication asks of the agent.
type Authority interface {
	// Secure reports whether the agent runs with TLS (not --insecure).
	Secure() bool
	// PeerNode names the cluster node a mutual-TLS peer's certificate
	// proves, if any.
	PeerNode(cs *tls.ConnectionState) (name string, ok bool)
	// TokenState is the replicated security record user tokens are
	// checked against (VerifyUserToken: the token key, the revoked
	// tokens); nil before the agent has learned it.
	TokenState() *cluster.Security
}

// errNoTokenKey: the agent's replica holds no user-token key yet.
var errNoTokenKey = cluster.Mark(cluster.ErrUnavailable, errors.New("user token: this agent has not yet learned the cluster's token key (a cluster just formed, or one running --insecure); retry in a moment"))

// VerifyUserToken is the user a bearer token proves, and the token's id:
// it must verify at now against the cluster's token key in sec and not
// be revoked. An error marked cluster.ErrUnavailable means the agent
// cannot verify tokens yet (answered 503, not 401). It is pure.
func VerifyUserToken(sec *cluster.Security, tok string, now time.Time) (api.Identity, string, error) {
	if sec == nil || len(sec.TokenKey) == 0 {
		return Nobody, "", errNoTokenKey
	}
	c, err := pki.VerifyUserToken(sec.TokenKey, tok, now)
	if err != nil {
		return Nobody, "", err
	}
	if sec.UserTokenRevoked(c.ID) {
		return Nobody, "", fmt.Errorf("%w: revoked", pki.ErrUserToken)
	}
	return api.Identity{User: c.User, UID: c.UID, GID: c.GID}, c.ID, nil
}

type callerKey struct{}

// WithCaller returns r acting for c, as a Unix socket's peer credentials
// or authentication mark it.
func WithCaller(r *http.Request, c Caller) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
}

// PeerCredConnContext stores the Unix peer's credentials in the
// connection's context; it is the http.Server's ConnContext.
func PeerCredConnContext(ctx context.Context, c net.Conn) context.Context {
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
	return context.WithValue(ctx, callerKey{}, Caller{Identity: id, Proven: true, How: "peercred", Local: true})
}

// CallerOf is the identity authentication resolved for r.
func CallerOf(r *http.Request) Caller {
	if c, ok := r.Context().Value(callerKey{}).(Caller); ok {
		return c
	}
	return Caller{Identity: Nobody}
}

// ResolveCaller decides who a request acts for. Identity comes only from
// what cannot be forged by the sender:
//   - the Unix socket: the kernel's peer credentials (SO_PEERCRED); a
//     root caller may declare another user to act as;
//   - a node certificate (mutual TLS): the peer is that node, and when it
//     marks the request as forwarded by itself, the identity headers are
//     what it proved of its own caller (nodes are trusted with the
//     cluster: DESIGN, "the trust boundary");
//   - a user token (Authorization: Bearer, over TLS) signed with the
//     cluster's token key, unexpired and not revoked: that user;
//   - with --insecure only, a forwarded request's headers from anyone.
//
// Declared headers on any other request are ignored: loopback proves
// nothing about which local user sent it.
func ResolveCaller(auth Authority, r *http.Request) Caller {
	forwardedBy := r.Header.Get(api.HeaderForwardedBy)
	declared, hasDeclared := declaredIdentity(r)
	if c, ok := r.Context().Value(callerKey{}).(Caller); ok {
		// Unix socket: the kernel told us. Root may act as another user
		// (as Slurm's root may submit with --uid): it could anyway.
		if c.UID == 0 && hasDeclared {
			return Caller{Identity: declared, Proven: true, How: "root as " + declared.User, Local: true}
		}
		return c
	}
	if auth.Secure() {
		if tok, ok := bearerToken(r); ok {
			id, tokID, err := VerifyUserToken(auth.TokenState(), tok, time.Now())
			if err != nil {
				return Caller{Identity: Nobody, AuthErr: err}
			}
			return Caller{Identity: id, Proven: true, How: "user token " + tokID}
		}
		name, ok := auth.PeerNode(r.TLS)
		if !ok {
			return Caller{Identity: Nobody}
		}
		if forwardedBy == name && hasDeclared {
			return Caller{Identity: declared, Proven: true, How: "forwarded by " + name, Node: name}
		}
		return Caller{Identity: api.Identity{User: "node:" + name, UID: -1, GID: -1}, How: "node certificate", Node: name}
	}
	if forwardedBy != "" && hasDeclared {
		// --insecure: nothing can be proven over TCP; forwarding is
		// believed so that a cluster works at all.
		return Caller{Identity: declared, Proven: true, How: "forwarded (insecure)", Node: forwardedBy}
	}
	if forwardedBy != "" {
		return Caller{Identity: api.Identity{User: "node:" + forwardedBy, UID: -1, GID: -1}, How: "insecure", Node: forwardedBy}
	}
	return Caller{Identity: Nobody}
}

// publicEndpoint is what anyone who reaches the API may ask: whether the
// agent is up, who leads, to join with a token, and the web view's files
// (package ui: they hold no cluster data; the page reads the API with the
// user's token). Everything else needs an identity.
func publicEndpoint(r *http.Request) bool {
	// A joining node has no certificate yet: its join token is checked by
	// the handler.
	if r.Method == http.MethodPost && r.URL.Path == "/v1/join" {
		return true
	}
	if r.Method != http.MethodGet {
		return false
	}
	switch p := r.URL.Path; {
	case p == "/v1/status", p == "/v1/leader":
		return true
	case p == "/ui", strings.HasPrefix(p, "/ui/"):
		return true
	}
	return false
}

// Authenticate resolves every request's caller before routing. With TLS, a
// TCP request from neither a node nor a proven user is refused, reads
// included: job commands, environments and output are not for whoever can
// reach the port.
func Authenticate(auth Authority, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := ResolveCaller(auth, r)
		if euid := os.Geteuid(); euid != 0 && who.Local && who.UID != euid {
			// Tasks run as the agent's own user: another user's work would
			// run as someone they are not.
			WriteError(w, cluster.Mark(cluster.ErrForbidden, fmt.Errorf("this agent runs as uid %d, not root, and so accepts work only from its own user (you are uid %d)", euid, who.UID)))
			return
		}
		if who.Anonymous() && auth.Secure() && !publicEndpoint(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="shoal"`)
			if errors.Is(who.AuthErr, cluster.ErrUnavailable) {
				// A replica that has not yet applied the entry recording
				// the key (a cluster just formed): not the token's fault.
				WriteError(w, who.AuthErr)
				return
			}
			if who.AuthErr != nil {
				WriteError(w, cluster.Mark(cluster.ErrUnauthenticated, who.AuthErr))
				return
			}
			WriteError(w, cluster.Mark(cluster.ErrUnauthenticated, errors.New("authentication required: use the agent's Unix socket on its node (<data-dir>/shoal.sock), or over TCP a user token from 'shoal token create' ($SHOAL_TOKEN)")))
			return
		}
		next.ServeHTTP(w, WithCaller(r, who))
	})
}

// RequireNode refuses a request about node name that does not come from
// that node itself (with --insecure, any node's word is taken): a node may
// change only its own records. An empty name accepts any node.
func RequireNode(auth Authority, r *http.Request, name string) error {
	who := CallerOf(r)
	if !auth.Secure() && !who.Local {
		return nil
	}
	if who.Node == "" {
		return cluster.Mark(cluster.ErrForbidden, fmt.Errorf("%s %s: %w: only cluster nodes may call it", r.Method, r.URL.Path, cluster.ErrForbidden))
	}
	if name != "" && who.Node != name {
		return cluster.Mark(cluster.ErrForbidden, fmt.Errorf("%s %s: %w: node %s may not act for node %s", r.Method, r.URL.Path, cluster.ErrForbidden, who.Node, name))
	}
	return nil
}

// RequireProven refuses a write from a caller whose identity nothing
// proves.
func RequireProven(who Caller) error {
	if who.Proven {
		return nil
	}
	return cluster.Mark(cluster.ErrForbidden, errors.New("identity: writes over TCP are accepted only from loopback or a peer agent; use the agent's Unix socket (<data-dir>/shoal.sock)"))
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

// userName resolves uid to a name, or the number when it has none.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return fmt.Sprint(uid)
}

// bearerToken returns the token of an "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	return strings.TrimSpace(tok), ok && tok != ""
}

// Who is the plain identity the leader and the worker decide on: the
// caller's user and whether the API proved it.
func (c Caller) Who() cluster.Identity {
	return cluster.Identity{User: c.User, UID: c.UID, GID: c.GID, Proven: c.Proven}
}
