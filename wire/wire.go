package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// MaxNesting bounds how deeply msgpack containers may nest in anything
// Shoal decodes. The deepest legitimate path (snapshot → jobs → job →
// alloc → nodes → node → gpus) is under 10 levels.
const MaxNesting = 32

var errTruncated = errors.New("msgpack: truncated")

// Decode decodes exactly one msgpack value from b into v. It first
// walks b and refuses input that is malformed, nests deeper than
// MaxNesting, declares a container or string longer than the bytes left,
// or carries trailing bytes. msgpack v5.4.1 preallocates slices to the
// length a header declares, so without the walk a few hostile bytes could
// demand gigabytes.
func Decode(b []byte, v any) error {
	if err := CheckWellFormed(b); err != nil {
		return err
	}
	return msgpack.Unmarshal(b, v)
}

// CheckWellFormed reports whether b is exactly one well-formed msgpack
// value whose declared lengths all fit in b.
func CheckWellFormed(b []byte) error {
	end, err := skipValue(b, 0, 0)
	if err != nil {
		return err
	}
	if end != len(b) {
		return fmt.Errorf("msgpack: %d trailing bytes after the value", len(b)-end)
	}
	return nil
}

// skipValue returns the offset just past the value starting at off.
func skipValue(b []byte, off, depth int) (int, error) {
	if depth > MaxNesting {
		return 0, fmt.Errorf("msgpack: nested deeper than %d at offset %d", MaxNesting, off)
	}
	if off >= len(b) {
		return 0, errTruncated
	}
	c := b[off]
	off++
	switch {
	case c <= 0x7f || c >= 0xe0: // positive and negative fixint
		return off, nil
	case c <= 0x8f: // fixmap
		return skipItems(b, off, uint64(c&0x0f), 2, depth)
	case c <= 0x9f: // fixarray
		return skipItems(b, off, uint64(c&0x0f), 1, depth)
	case c <= 0xbf: // fixstr
		return skipBytes(b, off, uint64(c&0x1f))
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return off, nil
	case 0xc4, 0xd9: // bin8, str8
		return skipSized(b, off, 1, 0)
	case 0xc5, 0xda: // bin16, str16
		return skipSized(b, off, 2, 0)
	case 0xc6, 0xdb: // bin32, str32
		return skipSized(b, off, 4, 0)
	case 0xc7: // ext8: length, type, data
		return skipSized(b, off, 1, 1)
	case 0xc8: // ext16
		return skipSized(b, off, 2, 1)
	case 0xc9: // ext32
		return skipSized(b, off, 4, 1)
	case 0xcc, 0xd0: // uint8, int8
		return skipBytes(b, off, 1)
	case 0xcd, 0xd1: // uint16, int16
		return skipBytes(b, off, 2)
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return skipBytes(b, off, 4)
	case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
		return skipBytes(b, off, 8)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16: type, data
		return skipBytes(b, off, 1+(1<<(c-0xd4)))
	case 0xdc: // array16
		return skipContainer(b, off, 2, 1, depth)
	case 0xdd: // array32
		return skipContainer(b, off, 4, 1, depth)
	case 0xde: // map16
		return skipContainer(b, off, 2, 2, depth)
	case 0xdf: // map32
		return skipContainer(b, off, 4, 2, depth)
	}
	return 0, fmt.Errorf("msgpack: invalid code 0x%02x at offset %d", c, off-1)
}

// skipContainer skips a count field of width bytes and the container
// entries (of per values each) it declares.
func skipContainer(b []byte, off, width int, per uint64, depth int) (int, error) {
	n, off, err := readLen(b, off, width)
	if err != nil {
		return 0, err
	}
	return skipItems(b, off, n, per, depth)
}

// skipItems skips n container entries of per values each. Every value
// takes at least one byte, so a count larger than the bytes left is a lie.
func skipItems(b []byte, off int, n, per uint64, depth int) (int, error) {
	total := n * per // n < 2^32, per <= 2: no overflow
	if total > uint64(len(b)-off) {
		return 0, fmt.Errorf("msgpack: container at offset %d declares %d values, %d bytes left", off, total, len(b)-off)
	}
	var err error
	for i := uint64(0); i < total; i++ {
		if off, err = skipValue(b, off, depth+1); err != nil {
			return 0, err
		}
	}
	return off, nil
}

// skipSized skips a length field of width bytes, extra header bytes (the
// ext type) and the payload the length declares.
func skipSized(b []byte, off, width, extra int) (int, error) {
	n, off, err := readLen(b, off, width)
	if err != nil {
		return 0, err
	}
	return skipBytes(b, off, n+uint64(extra))
}

func readLen(b []byte, off, width int) (uint64, int, error) {
	if len(b)-off < width {
		return 0, 0, errTruncated
	}
	var n uint64
	switch width {
	case 1:
		n = uint64(b[off])
	case 2:
		n = uint64(binary.BigEndian.Uint16(b[off:]))
	default:
		n = uint64(binary.BigEndian.Uint32(b[off:]))
	}
	return n, off + width, nil
}

func skipBytes(b []byte, off int, n uint64) (int, error) {
	if n > uint64(len(b)-off) {
		return 0, fmt.Errorf("msgpack: value at offset %d declares %d bytes, %d left", off, n, len(b)-off)
	}
	return off + int(n), nil
}
