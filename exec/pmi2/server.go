package pmi2

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/exec/pmix"
)

// Bounds of what ranks may store.
const (
	// maxPutBytes bounds one node's puts of one fence (keys and values).
	maxPutBytes = 64 << 20
	// maxNodeAttrs bounds a node's attributes (info-putnodeattr).
	maxNodeAttrs = 4096
	// maxKey bounds a key of the KVS.
	maxKey = 256
	// Advertised maxima (get_maxes), Slurm's and MPICH's hydra's.
	maxKVSName = 256
	maxKeyLen  = 64
	maxValLen  = 1024
)

// Config is what Start needs.
type Config struct {
	Job Job
	// Fencer exchanges the fences with the step's other nodes (package
	// pmix's, through the agents).
	Fencer pmix.Fencer
	Log    *slog.Logger
	// OnFail is called (maybe more than once, from the ranks'
	// goroutines) when the ranks cannot go on: a fence failed, a rank
	// aborted, or a rank left PMI without finalizing while the others
	// need it; the supervisor kills them and the step fails.
	OnFail func(err error)
	// FenceTimeout bounds a fence (from a rank's entry) and a wait for a
	// node attribute; pmix.FenceTimeout when zero.
	FenceTimeout time.Duration
}

// Server serves PMI-1 and PMI-2 to one node's ranks of a step, one
// socket pair per rank.
type Server struct {
	cfg   Config
	conns []net.Conn // the server's ends, by local rank
	child []*os.File // the ranks' ends, until Started

	mu       sync.Mutex
	kvs      map[string]string // every node's puts of the fences so far
	puts     map[string]string // this node's since the last fence
	putBytes int
	attrs    map[string]string // node attributes
	attrsSet chan struct{}     // closed (and replaced) at each attribute put
	open     *round            // this node's open fence
	lost     error             // a rank left PMI without finalize

	closed chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// round is one fence on this node: the local ranks in it and, once
// done is closed, its outcome.
type round struct {
	in   map[int]bool
	done chan struct{}
	err  error
}

// Start makes each local rank's socket pair and serves the server's
// ends. The ranks' ends are File(local), for the supervisor to pass to
// each rank (and close with Started once it forked).
func Start(cfg Config) (*Server, error) {
	if cfg.FenceTimeout <= 0 {
		cfg.FenceTimeout = pmix.FenceTimeout
	}
	if cfg.OnFail == nil {
		cfg.OnFail = func(error) {}
	}
	s := &Server{cfg: cfg, kvs: map[string]string{}, puts: map[string]string{}, attrs: map[string]string{},
		attrsSet: make(chan struct{}), closed: make(chan struct{})}
	// PMI-1 clients read the mapping from the KVS.
	s.kvs["PMI_process_mapping"] = cfg.Job.Mapping
	local := cfg.Job.Local()
	for i := range local {
		conn, child, err := socketPair(i)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.conns = append(s.conns, conn)
		s.child = append(s.child, child)
	}
	for i, c := range s.conns {
		s.wg.Go(func() { s.serve(i, c) })
	}
	return s, nil
}

func socketPair(local int) (net.Conn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("pmi2: rank %d's socket pair: %w", local, err)
	}
	f := os.NewFile(uintptr(fds[0]), "pmi-server")
	conn, err := net.FileConn(f) // a nonblocking dup of its own
	f.Close()
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("pmi2: rank %d's socket: %w", local, err)
	}
	return conn, os.NewFile(uintptr(fds[1]), "pmi-rank"), nil
}

// File is local rank's end of its socket pair, which it inherits as
// PMI_FD.
func (s *Server) File(local int) *os.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.child[local]
}

// Started closes the supervisor's copy of local rank's end once the
// rank has it (or will never run): the rank's exit then ends the
// connection.
func (s *Server) Started(local int) {
	s.mu.Lock()
	f := s.child[local]
	s.child[local] = nil
	s.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// Env is what local rank finds in its environment, with fd the number
// its end of the socket pair has in it.
func (s *Server) Env(local, fd int) []string {
	j := s.cfg.Job
	return []string{
		"PMI_FD=" + strconv.Itoa(fd),
		"PMI_RANK=" + strconv.Itoa(j.Local()[local]),
		"PMI_SIZE=" + strconv.Itoa(j.Size),
		"PMI_JOBID=" + j.ID,
		"PMI_SPAWNED=0",
	}
}

// Close ends every rank's connection and the fences.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closed)
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Lock()
		for i, f := range s.child {
			if f != nil {
				f.Close()
				s.child[i] = nil
			}
		}
		s.mu.Unlock()
	})
	s.wg.Wait()
	if s.cfg.Fencer != nil {
		s.cfg.Fencer.Close()
	}
}

// conn is one rank's connection as it is served.
type conn struct {
	local int
	rank  int
	c     net.Conn
	r     *bufio.Reader
	v2    bool // PMI-2 framing after init
}

func (s *Server) serve(local int, c net.Conn) {
	// A connection served no more is closed: its client reads the end
	// rather than waiting for an answer.
	defer c.Close()
	k := &conn{local: local, rank: s.cfg.Job.Local()[local], c: c, r: bufio.NewReaderSize(c, 4096)}
	log := s.cfg.Log.With("rank", k.rank)
	end := func(err error) {
		select {
		case <-s.closed:
			return
		default:
		}
		s.left(k, err)
	}
	// Every client starts with PMI-1's init, which names its version.
	line, err := readLine(k.r)
	if err != nil {
		end(fmt.Errorf("before PMI init: %w", err))
		return
	}
	m, err := Parse1(line)
	if err == nil && m.Cmd != "init" {
		err = fmt.Errorf("first command %q, want init", clip(m.Cmd))
	}
	if err != nil {
		log.Warn("pmi: bad init", "err", err)
		end(err)
		return
	}
	ver, _ := m.Get("pmi_version")
	resp := Msg{Cmd: "response_to_init"}
	switch ver {
	case "1":
		resp = resp.With("rc", "0").With("pmi_version", "1").With("pmi_subversion", "1")
	case "2":
		resp = resp.With("rc", "0").With("pmi_version", "2").With("pmi_subversion", "0")
		k.v2 = true
	default:
		// Slurm's answer to a version it does not speak: its own.
		resp = resp.With("rc", "1").With("pmi_version", "2").With("pmi_subversion", "0")
	}
	if err := s.write(k, resp, false); err != nil {
		end(fmt.Errorf("answer PMI init: %w", err))
		return
	}
	if ver != "1" && ver != "2" {
		log.Warn("pmi: init of a version not served", "version", clip(ver))
		end(fmt.Errorf("PMI init version %q: want 1 or 2", clip(ver)))
		return
	}
	log.Debug("pmi: init", "version", ver)
	for {
		var m Msg
		if k.v2 {
			var body []byte
			if body, err = readFrame(k.r); err == nil {
				m, err = Parse2(body)
			}
		} else {
			if line, err = readLine(k.r); err == nil {
				m, err = Parse1(line)
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				log.Warn("pmi: bad command", "err", err)
			}
			end(err)
			return
		}
		log.Debug("pmi: command", "cmd", m.Cmd)
		resp, fin, err := s.handle(k, m)
		if err != nil {
			log.Warn("pmi: command failed", "cmd", m.Cmd, "err", err)
		}
		if resp.Cmd != "" {
			if werr := s.write(k, resp, k.v2); werr != nil {
				end(werr)
				return
			}
		}
		if fin {
			log.Debug("pmi: finalized")
			return
		}
		if err != nil && resp.Cmd == "" {
			// No answer (an abort, a failed PMI-1 barrier, a command not
			// known): the rank is done with PMI, and a client waiting
			// would wait forever, so its connection ends.
			end(err)
			return
		}
	}
}

func (s *Server) write(k *conn, m Msg, v2 bool) error {
	var b []byte
	var err error
	if v2 {
		b, err = Format2(m)
	} else {
		b, err = Format1(m)
	}
	if err != nil {
		return err
	}
	_ = k.c.SetWriteDeadline(time.Now().Add(s.cfg.FenceTimeout))
	_, err = k.c.Write(b)
	return err
}

// left records that k's rank left PMI without finalizing: this node's
// fences can never complete, so the one open fails now and any later
// one at once.
func (s *Server) left(k *conn, why error) {
	err := fmt.Errorf("rank %d left PMI without finalizing: %w", k.rank, why)
	s.mu.Lock()
	if s.lost == nil {
		s.lost = err
	}
	f := s.open
	s.open = nil
	s.mu.Unlock()
	if f != nil {
		f.err = fmt.Errorf("%w: %w", pmix.ErrFence, err)
		close(f.done)
		s.cfg.OnFail(f.err)
	}
}

// enter puts local rank k into this node's open fence; the last local
// rank in sends this node's puts to the Fencer.
func (s *Server) enter(k *conn) (*round, error) {
	s.mu.Lock()
	if s.lost != nil {
		err := fmt.Errorf("%w: %w", pmix.ErrFence, s.lost)
		s.mu.Unlock()
		return nil, err
	}
	f := s.open
	if f == nil {
		f = &round{in: map[int]bool{}, done: make(chan struct{})}
		s.open = f
	}
	if f.in[k.local] {
		s.mu.Unlock()
		return nil, fmt.Errorf("rank %d entered the fence twice", k.rank)
	}
	f.in[k.local] = true
	if len(f.in) < len(s.conns) {
		s.mu.Unlock()
		return f, nil
	}
	s.open = nil
	blob := encodeKVS(s.puts)
	s.puts = map[string]string{}
	s.putBytes = 0
	s.mu.Unlock()
	s.cfg.Fencer.Fence(blob, func(all []byte, err error) {
		if err == nil {
			s.mu.Lock()
			err = decodeKVS(all, s.kvs)
			s.mu.Unlock()
		}
		f.err = err
		close(f.done)
	})
	return f, nil
}

// fence waits for k's fence, FenceTimeout at most.
func (s *Server) fence(k *conn) error {
	f, err := s.enter(k)
	if err != nil {
		return err
	}
	t := time.NewTimer(s.cfg.FenceTimeout)
	defer t.Stop()
	select {
	case <-f.done:
		return f.err
	case <-s.closed:
		return fmt.Errorf("%w: the step's PMI server is stopping", pmix.ErrFence)
	case <-t.C:
		return fmt.Errorf("%w: not met in %s", pmix.ErrFence, s.cfg.FenceTimeout)
	}
}

func (s *Server) put(key, value string) error {
	switch {
	case key == "":
		return errors.New("put: no key")
	case len(key) > maxKey:
		return fmt.Errorf("put: key of %d bytes, at most %d", len(key), maxKey)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(key) + len(value)
	if old, ok := s.puts[key]; ok {
		n -= len(key) + len(old)
	}
	if s.putBytes+n > maxPutBytes {
		return fmt.Errorf("put %q: this node's puts pass %d bytes", clip(key), maxPutBytes)
	}
	s.puts[key] = value
	s.putBytes += n
	return nil
}

func (s *Server) get(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kvs[key]
	return v, ok
}

func (s *Server) putAttr(key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.attrs[key]; !ok && len(s.attrs) >= maxNodeAttrs {
		return fmt.Errorf("info-putnodeattr %q: more than %d attributes", clip(key), maxNodeAttrs)
	}
	s.attrs[key] = value
	close(s.attrsSet)
	s.attrsSet = make(chan struct{})
	return nil
}

// getAttr is node attribute key; with wait it waits (FenceTimeout at
// most) for a local rank to put it.
func (s *Server) getAttr(key string, wait bool) (string, bool, error) {
	var t *time.Timer
	for {
		s.mu.Lock()
		v, ok := s.attrs[key]
		set := s.attrsSet
		s.mu.Unlock()
		if ok || !wait {
			return v, ok, nil
		}
		if t == nil {
			t = time.NewTimer(s.cfg.FenceTimeout)
			defer t.Stop()
		}
		select {
		case <-set:
		case <-s.closed:
			return "", false, errors.New("the step's PMI server is stopping")
		case <-t.C:
			return "", false, fmt.Errorf("node attribute %q not put in %s", clip(key), s.cfg.FenceTimeout)
		}
	}
}

// handle answers one command of k's rank: the response (none when Cmd
// is empty), whether the rank finalized, and what went wrong.
func (s *Server) handle(k *conn, m Msg) (Msg, bool, error) {
	if k.v2 {
		return s.handle2(k, m)
	}
	return s.handle1(k, m)
}

func rc(err error) string {
	if err != nil {
		return "-1"
	}
	return "0"
}

// handle1 is PMI-1 (MPICH's simple PMI), as Slurm's pmi2 plugin answers
// it.
func (s *Server) handle1(k *conn, m Msg) (Msg, bool, error) {
	j := s.cfg.Job
	switch m.Cmd {
	case "get_maxes":
		return Msg{Cmd: "maxes"}.With("rc", "0").With("kvsname_max", strconv.Itoa(maxKVSName)).
			With("keylen_max", strconv.Itoa(maxKeyLen)).With("vallen_max", strconv.Itoa(maxValLen)), false, nil
	case "get_universe_size":
		return Msg{Cmd: "universe_size"}.With("rc", "0").With("size", strconv.Itoa(j.Size)), false, nil
	case "get_appnum":
		return Msg{Cmd: "appnum"}.With("rc", "0").With("appnum", "-1"), false, nil
	case "get_my_kvsname":
		return Msg{Cmd: "my_kvsname"}.With("rc", "0").With("kvsname", j.ID), false, nil
	case "put":
		key, _ := m.Get("key")
		value, _ := m.Get("value")
		err := s.put(key, value)
		resp := Msg{Cmd: "put_result"}.With("rc", rc(err))
		if err != nil {
			resp = resp.With("msg", "put_failed")
		}
		return resp, false, err
	case "get":
		key, _ := m.Get("key")
		if v, ok := s.get(key); ok {
			return Msg{Cmd: "get_result"}.With("rc", "0").With("value", v), false, nil
		}
		return Msg{Cmd: "get_result"}.With("rc", "-1").With("msg", "key_"+sanitize1(key)+"_not_found"), false, nil
	case "barrier_in":
		if err := s.fence(k); err != nil {
			// MPICH's PMI-1 client reads no rc from barrier_out: the
			// ranks are killed instead of answered.
			s.cfg.OnFail(err)
			return Msg{}, false, err
		}
		return Msg{Cmd: "barrier_out"}.With("rc", "0"), false, nil
	case "finalize":
		return Msg{Cmd: "finalize_ack"}.With("rc", "0"), true, nil
	case "abort":
		code, _ := m.Get("exitcode")
		err := fmt.Errorf("rank %d called PMI_Abort (exit code %s)", k.rank, clip(code))
		s.cfg.OnFail(err)
		return Msg{}, false, err
	case "publish_name":
		return Msg{Cmd: "publish_result"}.With("rc", "-1").With("info", "fail"), false, errors.New("publish_name: not served")
	case "unpublish_name":
		return Msg{Cmd: "unpublish_result"}.With("rc", "-1").With("info", "fail"), false, errors.New("unpublish_name: not served")
	case "lookup_name":
		return Msg{Cmd: "lookup_result"}.With("rc", "-1").With("info", "fail"), false, errors.New("lookup_name: not served")
	}
	return Msg{}, false, fmt.Errorf("pmi-1 command %q is not served (spawn, getbyidx and KVS creation are not)", clip(m.Cmd))
}

// sanitize1 keeps a PMI-1 value to one token.
func sanitize1(s string) string {
	b := []byte(clip(s))
	for i, c := range b {
		if c == ' ' || c == '\n' {
			b[i] = '_'
		}
	}
	return string(b)
}

// handle2 is PMI-2, as Slurm's pmi2 plugin answers it.
func (s *Server) handle2(k *conn, m Msg) (Msg, bool, error) {
	j := s.cfg.Job
	resp := Msg{Cmd: m.Cmd + "-response"}
	fail := func(err error) (Msg, bool, error) {
		return resp.With("rc", "-1").With("errmsg", err.Error()), false, err
	}
	found := func(v string, ok bool) Msg {
		if !ok {
			return resp.With("rc", "0").With("found", "FALSE")
		}
		return resp.With("rc", "0").With("found", "TRUE").With("value", v)
	}
	switch m.Cmd {
	case "fullinit":
		if r, ok := m.Get("pmirank"); ok && r != strconv.Itoa(k.rank) {
			return fail(fmt.Errorf("fullinit: pmirank %s, this is rank %d", clip(r), k.rank))
		}
		return resp.With("rc", "0").With("pmi-version", "2").With("pmi-subversion", "0").
			With("rank", strconv.Itoa(k.rank)).With("size", strconv.Itoa(j.Size)).With("appnum", "-1").
			With("debugged", "FALSE").With("pmiverbose", "FALSE"), false, nil
	case "job-getid":
		return resp.With("rc", "0").With("jobid", j.ID), false, nil
	case "info-getjobattr":
		key, _ := m.Get("key")
		return found(j.Attr(key)), false, nil
	case "kvs-put":
		key, _ := m.Get("key")
		value, _ := m.Get("value")
		if err := s.put(key, value); err != nil {
			return fail(err)
		}
		return resp.With("rc", "0"), false, nil
	case "kvs-fence":
		if err := s.fence(k); err != nil {
			s.cfg.OnFail(err)
			return fail(err)
		}
		return resp.With("rc", "0"), false, nil
	case "kvs-get":
		key, _ := m.Get("key")
		return found(s.get(key)), false, nil
	case "info-putnodeattr":
		key, _ := m.Get("key")
		value, _ := m.Get("value")
		if key == "" {
			return fail(errors.New("info-putnodeattr: no key"))
		}
		if err := s.putAttr(key, value); err != nil {
			return fail(err)
		}
		return resp.With("rc", "0"), false, nil
	case "info-getnodeattr":
		key, _ := m.Get("key")
		wait, _ := m.Get("wait")
		v, ok, err := s.getAttr(key, wait == "TRUE")
		if err != nil {
			return fail(err)
		}
		return found(v, ok), false, nil
	case "finalize":
		return resp.With("rc", "0"), true, nil
	case "abort":
		isworld, _ := m.Get("isworld")
		msg, _ := m.Get("msg")
		err := fmt.Errorf("rank %d called PMI2_Abort (isworld %s): %s", k.rank, clip(isworld), clip(msg))
		if isworld == "TRUE" {
			// As Slurm: only an abort of the world ends the step; the
			// rank itself exits either way.
			s.cfg.OnFail(err)
		}
		return Msg{}, false, err
	case "job-connect", "job-disconnect", "name-publish", "name-unpublish", "name-lookup", "spawn":
		return fail(fmt.Errorf("%s is not served", m.Cmd))
	}
	return Msg{}, false, fmt.Errorf("pmi-2 command %q is not served", clip(m.Cmd))
}
