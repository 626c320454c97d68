package task

import (
	"encoding/binary"
	"fmt"
	"io"
)

// The terminal (pty.go) and stdin (stdin.go) sockets carry frames of one
// layout: a type byte, the payload's length in size bytes (2 for the
// terminal, 4 for stdin), big-endian, and the payload. Each protocol
// names its types and bounds; these read and write the layout.

// appendFrameHeader appends a frame's type and its length n in size bytes.
func appendFrameHeader(b []byte, typ byte, size, n int) []byte {
	b = append(b, typ)
	if size == 2 {
		return binary.BigEndian.AppendUint16(b, uint16(n))
	}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// appendDataFrames appends frames of type typ carrying p, split at max
// bytes a frame.
func appendDataFrames(b []byte, typ byte, size, max int, p []byte) []byte {
	for len(p) > 0 {
		n := min(len(p), max)
		b = appendFrameHeader(b, typ, size, n)
		b = append(b, p[:n]...)
		p = p[n:]
	}
	return b
}

// readFrameHeader reads a frame's type and length (size bytes). It
// returns io.EOF at a clean end between frames and an error marked bad
// for a header cut short.
func readFrameHeader(r io.Reader, size int, bad error) (typ byte, n int, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:1]); err != nil {
		return 0, 0, err
	}
	if _, err := io.ReadFull(r, hdr[1:1+size]); err != nil {
		return 0, 0, fmt.Errorf("%w: header cut short: %w", bad, err)
	}
	if size == 2 {
		return hdr[0], int(binary.BigEndian.Uint16(hdr[1:])), nil
	}
	return hdr[0], int(binary.BigEndian.Uint32(hdr[1:])), nil
}

// readFramePayload reads a frame's n bytes of payload into buf's storage
// (n is at most len(buf)); a payload cut short is an error marked bad.
func readFramePayload(r io.Reader, buf []byte, n int, bad error) ([]byte, error) {
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		return nil, fmt.Errorf("%w: payload cut short: %w", bad, err)
	}
	return buf[:n], nil
}
