package node

import (
	"context"
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
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/pki"
)

// caller is who a request acts for, and how we know.
type caller struct {
	api.Identity
	// proven: from SO_PEERCRED, or vouched for by a peer node that proved
	// it (a forwarded request over mutual TLS). Writes require it.
	proven bool
	how    string
	// node is the cluster node the TCP peer proved to be with its
	// certificate; "" for users. Only nodes may call /v1/internal/*, and a
	// node may change only its own records.
	node string
	// local: the request came through this agent's Unix socket.
	local bool
	// authErr says why credentials the caller sent were refused (a user
	// token that does not verify), for the 401.
	authErr error
}

// anonymous reports whether nothing about the caller is known: no socket
// credentials, no node certificate, no forwarded identity.
func (c caller) anonymous() bool { return !c.proven && c.node == "" }

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
	return context.WithValue(ctx, callerKey{}, caller{Identity: id, proven: true, how: "peercred", local: true})
}

// callerOf is the identity authenticate resolved for r.
func callerOf(r *http.Request) caller {
	if c, ok := r.Context().Value(callerKey{}).(caller); ok {
		return c
	}
	return caller{Identity: nobody}
}

// nobody is the identity of a caller nothing is known about.
var nobody = api.Identity{User: "nobody", UID: -1, GID: -1}

// resolveCaller decides who a request acts for. Identity comes only from
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
func (a *Agent) resolveCaller(r *http.Request) caller {
	forwardedBy := r.Header.Get(api.HeaderForwardedBy)
	declared, hasDeclared := declaredIdentity(r)
	if c, ok := r.Context().Value(callerKey{}).(caller); ok {
		// Unix socket: the kernel told us. Root may act as another user
		// (as Slurm's root may submit with --uid): it could anyway.
		if c.UID == 0 && hasDeclared {
			return caller{Identity: declared, proven: true, how: "root as " + declared.User, local: true}
		}
		return c
	}
	if b := a.sec.bundle; b != nil {
		if tok, ok := bearerToken(r); ok {
			return a.tokenCaller(tok)
		}
		name, ok := b.PeerNode(r.TLS)
		if !ok {
			return caller{Identity: nobody}
		}
		if forwardedBy == name && hasDeclared {
			return caller{Identity: declared, proven: true, how: "forwarded by " + name, node: name}
		}
		return caller{Identity: api.Identity{User: "node:" + name, UID: -1, GID: -1}, how: "node certificate", node: name}
	}
	if forwardedBy != "" && hasDeclared {
		// --insecure: nothing can be proven over TCP; forwarding is
		// believed so that a cluster works at all.
		return caller{Identity: declared, proven: true, how: "forwarded (insecure)", node: forwardedBy}
	}
	if forwardedBy != "" {
		return caller{Identity: api.Identity{User: "node:" + forwardedBy, UID: -1, GID: -1}, how: "insecure", node: forwardedBy}
	}
	return caller{Identity: nobody}
}

// publicEndpoint is what anyone who reaches the API may ask: whether the
// agent is up, who leads, and to join with a token. Everything else needs
// an identity.
func publicEndpoint(r *http.Request) bool {
	// A joining node has no certificate yet: its join token is checked by
	// the handler.
	if r.Method == http.MethodPost && r.URL.Path == "/v1/join" {
		return true
	}
	return r.Method == http.MethodGet && (r.URL.Path == "/v1/status" || r.URL.Path == "/v1/leader")
}

// authenticate resolves every request's caller before routing. With TLS, a
// TCP request from neither a node nor a proven user is refused, reads
// included: job commands, environments and output are not for whoever can
// reach the port.
func (a *Agent) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := a.resolveCaller(r)
		if euid := os.Geteuid(); euid != 0 && who.local && who.UID != euid {
			// Tasks run as the agent's own user: another user's work would
			// run as someone they are not.
			httpapi.WriteError(w, forbidden(fmt.Errorf("this agent runs as uid %d, not root, and so accepts work only from its own user (you are uid %d)", euid, who.UID)))
			return
		}
		if who.anonymous() && a.sec.bundle != nil && !publicEndpoint(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="shoal"`)
			if errors.Is(who.authErr, errNoTokenKey) {
				// A replica that has not yet applied the entry recording
				// the key (a cluster just formed): not the token's fault.
				httpapi.WriteError(w, unavailable(who.authErr))
				return
			}
			if who.authErr != nil {
				httpapi.WriteError(w, unauthenticated(who.authErr))
				return
			}
			httpapi.WriteError(w, unauthenticated(errors.New("authentication required: use the agent's Unix socket on its node (<data-dir>/shoal.sock), or over TCP a user token from 'shoal token create' ($SHOAL_TOKEN)")))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, who)))
	})
}

// requireNode refuses a request about node name that does not come from
// that node itself (with --insecure, any node's word is taken): a node may
// change only its own records. An empty name accepts any node.
func (a *Agent) requireNode(r *http.Request, name string) error {
	who := callerOf(r)
	if a.sec.bundle == nil && !who.local {
		return nil
	}
	if who.node == "" {
		return forbidden(fmt.Errorf("%s %s: %w: only cluster nodes may call it", r.Method, r.URL.Path, ErrForbidden))
	}
	if name != "" && who.node != name {
		return forbidden(fmt.Errorf("%s %s: %w: node %s may not act for node %s", r.Method, r.URL.Path, ErrForbidden, who.node, name))
	}
	return nil
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

// errNoTokenKey: this agent's replica holds no user-token key yet.
var errNoTokenKey = errors.New("user token: this agent has not yet learned the cluster's token key (a cluster just formed, or one running --insecure); retry in a moment")

// bearerToken returns the token of an "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	return strings.TrimSpace(tok), ok && tok != ""
}

// tokenCaller is the user a token proves, if it verifies against the
// cluster's token key and was not revoked.
func (a *Agent) tokenCaller(tok string) caller {
	sec := a.state.View().Security()
	if sec == nil || len(sec.TokenKey) == 0 {
		return caller{Identity: nobody, authErr: errNoTokenKey}
	}
	c, err := pki.VerifyUserToken(sec.TokenKey, tok, time.Now())
	if err != nil {
		return caller{Identity: nobody, authErr: err}
	}
	if sec.UserTokenRevoked(c.ID) {
		return caller{Identity: nobody, authErr: fmt.Errorf("%w: revoked", pki.ErrUserToken)}
	}
	return caller{Identity: api.Identity{User: c.User, UID: c.UID, GID: c.GID}, proven: true, how: "user token " + c.ID}
}
