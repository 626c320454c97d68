package task

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestPtyFrames(t *testing.T) {
	big := bytes.Repeat([]byte("x"), MaxPtyData+5)
	var b []byte
	b = AppendPtyData(b, []byte("ls\r"))
	b = AppendPtyResize(b, 24, 80)
	b = AppendPtyData(b, big)
	r := bytes.NewReader(b)
	buf := make([]byte, MaxPtyData)
	var got []PtyFrame
	for {
		f, err := ReadPtyFrame(r, buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Data = bytes.Clone(f.Data)
		got = append(got, f)
	}
	if len(got) != 4 {
		t.Fatalf("got %d frames, want 4: %+v", len(got), got)
	}
	if string(got[0].Data) != "ls\r" || got[1].Type != PtyResize || got[1].Rows != 24 || got[1].Cols != 80 ||
		len(got[2].Data) != MaxPtyData || len(got[3].Data) != 5 {
		t.Fatalf("frames: %+v", got[:2])
	}
}

func TestPtyFrameMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"unknown type", []byte{'x', 0, 1, 'a'}},
		{"empty data", []byte{'d', 0, 0}},
		{"data too long", []byte{'d', 0xff, 0xff}},
		{"resize of 3", []byte{'w', 0, 3, 1, 2, 3}},
		{"header cut", []byte{'d', 0}},
		{"payload cut", []byte{'d', 0, 4, 'a'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadPtyFrame(bytes.NewReader(tc.in), make([]byte, MaxPtyData))
			if !errors.Is(err, ErrPtyFrame) {
				t.Fatalf("err = %v, want ErrPtyFrame", err)
			}
		})
	}
}

// FuzzReadPtyFrame: any bytes decode to frames or an error, never a panic,
// and a decoded frame encodes back to the bytes it came from.
func FuzzReadPtyFrame(f *testing.F) {
	f.Add(AppendPtyResize(AppendPtyData(nil, []byte("echo hi\r")), 50, 132))
	f.Add([]byte{'d', 0, 0})
	f.Add([]byte{'w', 0, 4, 0, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		buf := make([]byte, MaxPtyData)
		checkFramesRoundTrip(t, in, func(r io.Reader, again []byte) ([]byte, error) {
			fr, err := ReadPtyFrame(r, buf)
			if err != nil {
				return nil, err
			}
			switch fr.Type {
			case PtyData:
				return AppendPtyData(again, fr.Data), nil
			case PtyResize:
				return AppendPtyResize(again, fr.Rows, fr.Cols), nil
			}
			t.Fatalf("decoded type %q", fr.Type)
			return nil, nil
		})
	})
}

// checkFramesRoundTrip decodes in frame by frame with next, which
// appends each frame it decodes, encoded again, to again: each must be
// the bytes it was read from. It stops at the first error.
func checkFramesRoundTrip(t *testing.T, in []byte, next func(r io.Reader, again []byte) ([]byte, error)) {
	t.Helper()
	r := bytes.NewReader(in)
	var again []byte
	for range len(in) + 1 {
		start := len(in) - r.Len()
		var err error
		if again, err = next(r, again[:0]); err != nil {
			return
		}
		if end := len(in) - r.Len(); !bytes.Equal(again, in[start:end]) {
			t.Fatalf("frame %x re-encodes to %x", in[start:end], again)
		}
	}
}
