package task

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

// A --pty task (srun --pty) runs rank 0 on a pseudo-terminal whose master
// its supervisor holds and serves on PtySock, one connection at a time:
// what the connection sends is a stream of frames (below), what it
// receives is the terminal's output, raw, until the rank and everything
// holding the terminal are gone. The agent relays a connection of its
// API (GET /v1/jobs/{id}/pty) to that socket byte for byte, without
// reading the frames: only the supervisor decodes them.
//
// A frame is a type byte, a length (2 bytes, big-endian) and that many
// bytes of payload:
//
//	'd' LEN BYTES        input typed at the terminal (LEN 1 to MaxPtyData)
//	'w' 4 ROWS COLS      the window's size, ROWS and COLS 2 bytes each,
//	                     big-endian (TIOCSWINSZ on the master)
//
// Any other type, or a length outside those bounds, is malformed: the
// supervisor drops the connection.
const (
	PtyData   byte = 'd'
	PtyResize byte = 'w'
	// MaxPtyData bounds the payload of one data frame.
	MaxPtyData = 16 << 10
)

// PtyFrame is one decoded frame: Data for 'd', Rows and Cols for 'w'.
type PtyFrame struct {
	Type       byte
	Data       []byte
	Rows, Cols uint16
}

// ErrPtyFrame marks a malformed frame.
var ErrPtyFrame = errors.New("malformed terminal frame")

// AppendPtyData appends data frames carrying p (split at MaxPtyData).
func AppendPtyData(b, p []byte) []byte {
	return appendDataFrames(b, PtyData, 2, MaxPtyData, p)
}

// AppendPtyResize appends a window size frame.
func AppendPtyResize(b []byte, rows, cols uint16) []byte {
	b = appendFrameHeader(b, PtyResize, 2, 4)
	b = binary.BigEndian.AppendUint16(b, rows)
	return binary.BigEndian.AppendUint16(b, cols)
}

// ReadPtyFrame reads one frame from r into buf's storage (buf needs
// MaxPtyData bytes; the frame's Data aliases it). It returns io.EOF at a
// clean end between frames, and an error marked ErrPtyFrame for a
// malformed one.
func ReadPtyFrame(r io.Reader, buf []byte) (PtyFrame, error) {
	typ, n, err := readFrameHeader(r, 2, ErrPtyFrame)
	if err != nil {
		return PtyFrame{}, err
	}
	f := PtyFrame{Type: typ}
	switch f.Type {
	case PtyData:
		if n < 1 || n > MaxPtyData || n > len(buf) {
			return f, fmt.Errorf("%w: data length %d: want 1 to %d", ErrPtyFrame, n, min(MaxPtyData, len(buf)))
		}
	case PtyResize:
		if n != 4 {
			return f, fmt.Errorf("%w: window size length %d: want 4", ErrPtyFrame, n)
		}
	default:
		return f, fmt.Errorf("%w: type %q: want 'd' or 'w'", ErrPtyFrame, f.Type)
	}
	payload, err := readFramePayload(r, buf, n, ErrPtyFrame)
	if err != nil {
		return f, err
	}
	if f.Type == PtyResize {
		f.Rows, f.Cols = binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:])
		return f, nil
	}
	f.Data = payload
	return f, nil
}

// DialPty connects to the terminal of the --pty task in dir.
func DialPty(dir string) (net.Conn, error) { return dialIn(dir, PtySock) }
