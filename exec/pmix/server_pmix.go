//go:build pmix && cgo

package pmix

/*
#cgo pkg-config: pmix
#include <stdlib.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <errno.h>
#include <pmix.h>
#include <pmix_server.h>

extern void shoalFenceNB(char *data, size_t ndata, uintptr_t cbfunc, uintptr_t cbdata);
extern void shoalAbort(int status, char *msg);

// The server module: what the PMIx library asks of Shoal. Left NULL, a
// call is answered by the library itself (client connected and finalized:
// nothing to do) or refused as unsupported (direct modex, publish, spawn,
// connect...).
static pmix_status_t s_abort(const pmix_proc_t *proc, void *obj, int status, const char msg[],
		pmix_proc_t procs[], size_t nprocs, pmix_op_cbfunc_t cbfunc, void *cbdata) {
	shoalAbort(status, (char *)msg);
	if (cbfunc != NULL) {
		cbfunc(PMIX_SUCCESS, cbdata);
	}
	return PMIX_SUCCESS;
}

static pmix_status_t s_fence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[], size_t ninfo,
		char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata) {
	// Only the whole namespace fences (MPI_Init's, MPI_Finalize's,
	// PMIx_Fence(NULL)): a subset would need the nodes to agree on it.
	if (nprocs != 1 || procs[0].rank != PMIX_RANK_WILDCARD) {
		return PMIX_ERR_NOT_SUPPORTED;
	}
	shoalFenceNB(data, ndata, (uintptr_t)cbfunc, (uintptr_t)cbdata);
	return PMIX_SUCCESS;
}

static pmix_server_module_t shoal_module = {
	.abort = s_abort,
	.fence_nb = s_fence,
};

static void shoal_release(void *cbdata) { free(cbdata); }

void shoal_fence_done(uintptr_t cbfunc, uintptr_t cbdata, int ok, char *data, size_t ndata) {
	pmix_modex_cbfunc_t cb = (pmix_modex_cbfunc_t)cbfunc;
	if (!ok) {
		cb(PMIX_ERROR, NULL, 0, (void *)cbdata, NULL, NULL);
		return;
	}
	cb(PMIX_SUCCESS, data, ndata, (void *)cbdata, shoal_release, data);
}

static pmix_status_t shoal_init(char *tmpdir, uint32_t uid, uint32_t gid) {
	pmix_info_t *info;
	bool no = false;
	pmix_status_t rc;
	PMIX_INFO_CREATE(info, 5);
	PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, tmpdir, PMIX_STRING);
	PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, tmpdir, PMIX_STRING);
	PMIX_INFO_LOAD(&info[2], PMIX_USERID, &uid, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[3], PMIX_GRPID, &gid, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[4], PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
	rc = PMIx_server_init(&shoal_module, info, 5);
	PMIX_INFO_FREE(info, 5);
	return rc;
}

static pmix_info_t *shoal_infos(size_t n) {
	pmix_info_t *a;
	PMIX_INFO_CREATE(a, n);
	return a;
}
static void shoal_free_infos(pmix_info_t *a, size_t n) { PMIX_INFO_FREE(a, n); }
static void shoal_set_u32(pmix_info_t *a, size_t i, char *k, uint32_t v) { PMIX_INFO_LOAD(&a[i], k, &v, PMIX_UINT32); }
static void shoal_set_u16(pmix_info_t *a, size_t i, char *k, uint16_t v) { PMIX_INFO_LOAD(&a[i], k, &v, PMIX_UINT16); }
static void shoal_set_rank(pmix_info_t *a, size_t i, char *k, uint32_t v) {
	pmix_rank_t r = v;
	PMIX_INFO_LOAD(&a[i], k, &r, PMIX_PROC_RANK);
}
static void shoal_set_str(pmix_info_t *a, size_t i, char *k, char *v) { PMIX_INFO_LOAD(&a[i], k, v, PMIX_STRING); }
static void shoal_set_bool(pmix_info_t *a, size_t i, char *k, int v) {
	bool b = v != 0;
	PMIX_INFO_LOAD(&a[i], k, &b, PMIX_BOOL);
}
// shoal_set_infos loads sub (n entries) as a data array of infos, and
// frees sub: PMIx copies it.
static void shoal_set_infos(pmix_info_t *a, size_t i, char *k, pmix_info_t *sub, size_t n) {
	pmix_data_array_t d;
	d.type = PMIX_INFO;
	d.size = n;
	d.array = sub;
	PMIX_INFO_LOAD(&a[i], k, &d, PMIX_DATA_ARRAY);
	PMIX_INFO_FREE(sub, n);
}

// A registration's completion, waited for with a bound. It is allocated
// and, should the wait time out, left to the library (never freed).
typedef struct {
	pthread_mutex_t m;
	pthread_cond_t c;
	int done;
	pmix_status_t st;
} shoal_wait_t;

static void shoal_op_cb(pmix_status_t st, void *cbdata) {
	shoal_wait_t *w = cbdata;
	pthread_mutex_lock(&w->m);
	w->st = st;
	w->done = 1;
	pthread_cond_signal(&w->c);
	pthread_mutex_unlock(&w->m);
}

static shoal_wait_t *shoal_wait_new(void) {
	shoal_wait_t *w = calloc(1, sizeof *w);
	pthread_mutex_init(&w->m, NULL);
	pthread_cond_init(&w->c, NULL);
	return w;
}

// shoal_wait waits up to secs for w; -1 when it timed out (w then stays
// allocated: the library may still complete it).
static pmix_status_t shoal_wait(shoal_wait_t *w, pmix_status_t rc, int secs) {
	struct timespec ts;
	if (rc == PMIX_OPERATION_SUCCEEDED) {
		free(w);
		return PMIX_SUCCESS;
	}
	if (rc != PMIX_SUCCESS) {
		free(w);
		return rc;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	pthread_mutex_lock(&w->m);
	while (!w->done) {
		if (pthread_cond_timedwait(&w->c, &w->m, &ts) == ETIMEDOUT) {
			pthread_mutex_unlock(&w->m);
			return -1;
		}
	}
	pthread_mutex_unlock(&w->m);
	rc = w->st;
	free(w);
	return rc;
}

static pmix_status_t shoal_register_nspace(char *ns, int nlocal, pmix_info_t *info, size_t n, int secs) {
	shoal_wait_t *w = shoal_wait_new();
	pmix_status_t rc = PMIx_server_register_nspace(ns, nlocal, info, n, shoal_op_cb, w);
	rc = shoal_wait(w, rc, secs);
	if (rc != -1) {
		PMIX_INFO_FREE(info, n);
	}
	return rc;
}

static pmix_status_t shoal_register_client(char *ns, uint32_t rank, uint32_t uid, uint32_t gid, int secs) {
	pmix_proc_t p;
	shoal_wait_t *w = shoal_wait_new();
	PMIX_LOAD_PROCID(&p, ns, rank);
	return shoal_wait(w, PMIx_server_register_client(&p, uid, gid, NULL, shoal_op_cb, w), secs);
}

static char **shoal_setup_fork(char *ns, uint32_t rank, pmix_status_t *rc) {
	pmix_proc_t p;
	char **env = NULL;
	PMIX_LOAD_PROCID(&p, ns, rank);
	*rc = PMIx_server_setup_fork(&p, &env);
	return env;
}

static char *shoal_env_at(char **env, int i) { return env[i]; }
static void shoal_env_free(char **env) { PMIX_ARGV_FREE(env); }
static const char *shoal_error(pmix_status_t rc) { return PMIx_Error_string(rc); }
*/
import "C"

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// registerWait bounds each registration with the library (seconds).
const registerWait = 60

// active is the process's server: PMIx allows one per process, and a
// supervisor runs one task.
var active atomic.Pointer[Server]

// Server is the PMIx server of one step's ranks on this node.
type Server struct {
	cfg  Config
	dir  string     // the library's directory (rendezvous socket), the ranks' user's
	envs [][]string // each local rank's PMIx variables
	once sync.Once
}

// Start initialises the PMIx server library for cfg.Job's ranks on this
// node: its directory, the namespace, each local rank as a client, and
// each one's environment (Env). Close it once the ranks are gone.
func Start(cfg Config) (*Server, error) {
	if cfg.Fencer == nil {
		return nil, fmt.Errorf("pmix: no fencer")
	}
	s := &Server{cfg: cfg}
	if !active.CompareAndSwap(nil, s) {
		return nil, fmt.Errorf("pmix: a server already runs in this process")
	}
	ok := false
	defer func() {
		if !ok {
			active.Store(nil)
			if s.dir != "" {
				os.RemoveAll(s.dir)
			}
		}
	}()
	// A rank that dies while the library writes to it must not kill the
	// supervisor: a notified SIGPIPE is only counted, on whichever
	// thread it lands.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// The plain key-value store: its shared-memory one would need the
	// ranks' user to map the server's files.
	os.Setenv("PMIX_MCA_gds", "hash")

	dir, err := os.MkdirTemp("", "shoal-pmix-")
	if err != nil {
		return nil, fmt.Errorf("pmix: %w", err)
	}
	s.dir = dir
	if err := os.Chown(dir, cfg.UID, cfg.GID); err != nil && os.Geteuid() == 0 {
		return nil, fmt.Errorf("pmix: %w", err)
	}
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	if rc := C.shoal_init(cdir, C.uint32_t(cfg.UID), C.uint32_t(cfg.GID)); rc != C.PMIX_SUCCESS {
		return nil, fmt.Errorf("pmix: init the server: %s", pmixError(rc))
	}
	j := cfg.Job
	ns := C.CString(j.Nspace)
	defer C.free(unsafe.Pointer(ns))
	infos := j.Infos(dir)
	arr := loadInfos(infos)
	if rc := C.shoal_register_nspace(ns, C.int(len(j.Local())), arr, C.size_t(len(infos)), registerWait); rc != C.PMIX_SUCCESS {
		C.PMIx_server_finalize()
		return nil, fmt.Errorf("pmix: register namespace %s: %s", j.Nspace, pmixError(rc))
	}
	for _, r := range j.Local() {
		if rc := C.shoal_register_client(ns, C.uint32_t(r), C.uint32_t(cfg.UID), C.uint32_t(cfg.GID), registerWait); rc != C.PMIX_SUCCESS {
			C.PMIx_server_finalize()
			return nil, fmt.Errorf("pmix: register rank %d: %s", r, pmixError(rc))
		}
		var rc C.pmix_status_t
		env := C.shoal_setup_fork(ns, C.uint32_t(r), &rc)
		if rc != C.PMIX_SUCCESS {
			C.PMIx_server_finalize()
			return nil, fmt.Errorf("pmix: environment of rank %d: %s", r, pmixError(rc))
		}
		var kvs []string
		for i := 0; env != nil; i++ {
			p := C.shoal_env_at(env, C.int(i))
			if p == nil {
				break
			}
			kvs = append(kvs, C.GoString(p))
		}
		if env != nil {
			C.shoal_env_free(env)
		}
		s.envs = append(s.envs, append(kvs, "PMIX_MCA_gds=hash"))
	}
	ok = true
	cfg.Log.Info("pmix server up", "nspace", j.Nspace, "node", j.Node, "nodes", len(j.Nodes), "ranks", j.Size, "dir", dir)
	return s, nil
}

// Env is the PMIx environment of local rank local (PMIX_NAMESPACE,
// PMIX_RANK, the server's address...), to add to the rank's.
func (s *Server) Env(local int) []string { return s.envs[local] }

// Close stops the fences and the library and removes its directory.
func (s *Server) Close() {
	s.once.Do(func() {
		s.cfg.Fencer.Close()
		if rc := C.PMIx_server_finalize(); rc != C.PMIX_SUCCESS {
			s.cfg.Log.Warn("pmix: finalize", "err", pmixError(rc))
		}
		os.RemoveAll(s.dir)
		active.Store(nil)
	})
}

func pmixError(rc C.pmix_status_t) string {
	if rc == -1 {
		return fmt.Sprintf("no answer in %d s", registerWait)
	}
	return fmt.Sprintf("%s (%d)", C.GoString(C.shoal_error(rc)), int(rc))
}

// loadInfos builds the C array of infos (freed by the library's
// registration, or by shoal_set_infos for nested ones).
func loadInfos(infos []Info) *C.pmix_info_t {
	arr := C.shoal_infos(C.size_t(len(infos)))
	for i, in := range infos {
		k := C.CString(in.Key)
		at := C.size_t(i)
		switch v := in.Value.(type) {
		case uint32:
			C.shoal_set_u32(arr, at, k, C.uint32_t(v))
		case uint16:
			C.shoal_set_u16(arr, at, k, C.uint16_t(v))
		case Rank:
			C.shoal_set_rank(arr, at, k, C.uint32_t(v))
		case string:
			cv := C.CString(v)
			C.shoal_set_str(arr, at, k, cv)
			C.free(unsafe.Pointer(cv))
		case bool:
			b := C.int(0)
			if v {
				b = 1
			}
			C.shoal_set_bool(arr, at, k, b)
		case []Info:
			C.shoal_set_infos(arr, at, k, loadInfos(v), C.size_t(len(v)))
		default:
			panic(fmt.Sprintf("pmix: info %s: value of type %T", in.Key, in.Value)) // Infos makes none
		}
		C.free(unsafe.Pointer(k))
	}
	return arr
}
