//go:build pmix && cgo

package pmix

/*
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

// Defined in server_pmix.go's preamble (a file with //export may only
// declare).
void shoal_fence_done(uintptr_t cbfunc, uintptr_t cbdata, int ok, char *data, size_t ndata);
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// The PMIx library calls these on its own thread (the server module's
// fence_nb and abort, in server_pmix.go).

//export shoalFenceNB
func shoalFenceNB(data *C.char, ndata C.size_t, cbfunc, cbdata C.uintptr_t) {
	buf := C.GoBytes(unsafe.Pointer(data), C.int(ndata))
	s := active.Load()
	if s == nil {
		C.shoal_fence_done(cbfunc, cbdata, 0, nil, 0)
		return
	}
	s.cfg.Fencer.Fence(buf, func(all []byte, err error) {
		if err != nil {
			s.cfg.Log.Error("pmix fence", "err", err)
			C.shoal_fence_done(cbfunc, cbdata, 0, nil, 0)
			if s.cfg.OnFail != nil {
				s.cfg.OnFail(err)
			}
			return
		}
		p := C.malloc(C.size_t(max(len(all), 1)))
		if len(all) > 0 {
			C.memcpy(p, unsafe.Pointer(&all[0]), C.size_t(len(all)))
		}
		C.shoal_fence_done(cbfunc, cbdata, 1, (*C.char)(p), C.size_t(len(all)))
	})
}

//export shoalAbort
func shoalAbort(status C.int, msg *C.char) {
	m := ""
	if msg != nil {
		m = C.GoString(msg)
	}
	if s := active.Load(); s != nil {
		s.cfg.Log.Warn("pmix: a rank aborted", "status", int(status), "msg", m)
		if s.cfg.OnFail != nil {
			s.cfg.OnFail(fmt.Errorf("a rank aborted with status %d: %s", int(status), m))
		}
	}
}
