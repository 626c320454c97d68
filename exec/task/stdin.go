package task

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

// Ranks that read srun's own stdin (srun --input=all, Slurm's default, or
// -i N; Launch.RelayRank) read a pipe whose write end their supervisor
// holds. The supervisor serves two sockets, one connection at a time,
// and what either delivers is one stream, written to every such rank's
// pipe of the node; a rank that exits, or closes its stdin, is dropped.
//
// StdinSock (the agent's relay of api.StdinProtocol, srun before
// resumable input) takes the stream raw: the connection's end is the
// ranks' end of input, and nothing is sent back.
//
// StdinResumeSock (api.StdinResumeProtocol) survives its connection
// breaking (an agent on the way restarting): the supervisor first sends
// how many bytes of the stream it has delivered so far, 8 bytes
// big-endian, and the client sends frames from that offset on; the
// supervisor sends the count again as it grows (acknowledgements, which
// bound what the client keeps), and StdinDone once its ranks read no
// more (the stream ended, or no rank is left), then closes. A frame is a
// type byte and a length (4 bytes, big-endian):
//
//	'd' LEN BYTES        the next bytes of the stream (LEN 1 to MaxStdinData)
//	'e' 0                the end of the stream: the ranks' end of input
//
// A connection that ends without 'e' leaves the ranks' input open for
// the next one; only a frame read whole counts as delivered.
const (
	StdinData byte = 'd'
	StdinEnd  byte = 'e'
	// MaxStdinData bounds the payload of one data frame.
	MaxStdinData = 64 << 10
	// StdinDone, as a count, says the ranks read no more.
	StdinDone = ^uint64(0)
)

// StdinFrame is one decoded frame: Data (aliasing the caller's buffer)
// for StdinData, none for StdinEnd.
type StdinFrame struct {
	Type byte
	Data []byte
}

// ErrStdinFrame marks a malformed frame.
var ErrStdinFrame = errors.New("malformed stdin frame")

// AppendStdinData appends data frames carrying p (split at MaxStdinData).
func AppendStdinData(b, p []byte) []byte {
	return appendDataFrames(b, StdinData, 4, MaxStdinData, p)
}

// AppendStdinEnd appends the end-of-stream frame.
func AppendStdinEnd(b []byte) []byte {
	return appendFrameHeader(b, StdinEnd, 4, 0)
}

// ReadStdinFrame reads one frame from r into buf's storage (buf needs
// MaxStdinData bytes). It returns io.EOF at a clean end between frames,
// and an error marked ErrStdinFrame for a malformed or cut one.
func ReadStdinFrame(r io.Reader, buf []byte) (StdinFrame, error) {
	typ, n, err := readFrameHeader(r, 4, ErrStdinFrame)
	if err != nil {
		return StdinFrame{}, err
	}
	f := StdinFrame{Type: typ}
	switch f.Type {
	case StdinData:
		if n < 1 || n > MaxStdinData || n > len(buf) {
			return f, fmt.Errorf("%w: data length %d: want 1 to %d", ErrStdinFrame, n, min(MaxStdinData, len(buf)))
		}
	case StdinEnd:
		if n != 0 {
			return f, fmt.Errorf("%w: end length %d: want 0", ErrStdinFrame, n)
		}
		return f, nil
	default:
		return f, fmt.Errorf("%w: type %q: want 'd' or 'e'", ErrStdinFrame, f.Type)
	}
	if f.Data, err = readFramePayload(r, buf, n, ErrStdinFrame); err != nil {
		return f, err
	}
	return f, nil
}

// AppendStdinCount appends a count (or StdinDone) as the supervisor
// sends it.
func AppendStdinCount(b []byte, n uint64) []byte { return binary.BigEndian.AppendUint64(b, n) }

// ReadStdinCount reads one count the supervisor sent.
func ReadStdinCount(r io.Reader) (uint64, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b[:]), nil
}

// DialStdin connects to the stdin of the ranks of the task in dir: its
// resumable socket when resume, else the raw one.
func DialStdin(dir string, resume bool) (net.Conn, error) {
	if resume {
		return dialIn(dir, StdinResumeSock)
	}
	return dialIn(dir, StdinSock)
}

// DialPMIx connects to the fences of the PMIx step whose first node's
// task is in dir (PMIxSock; package pmix has the protocol): what the
// step's other supervisors reach through the agents.
func DialPMIx(dir string) (net.Conn, error) { return dialIn(dir, PMIxSock) }
