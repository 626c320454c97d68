package wire

import (
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

type sample struct {
	Name  string            `msgpack:"name"`
	GPUs  []int             `msgpack:"gpus"`
	Attrs map[string]string `msgpack:"attrs"`
	Inner *sample           `msgpack:"inner"`
}

func TestDecode(t *testing.T) {
	good, err := msgpack.Marshal(sample{Name: "n1", GPUs: []int{0, 1}, Attrs: map[string]string{"a": "b"}, Inner: &sample{Name: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	deep := make([]byte, 0, MaxNesting+2)
	for range MaxNesting + 2 {
		deep = append(deep, 0x91) // fixarray of one element
	}
	deep = append(deep, 0x01)
	tests := []struct {
		name    string
		in      []byte
		wantErr string // "" for success
	}{
		{"well formed", good, ""},
		{"empty", nil, "truncated"},
		{"array32 claiming 2^32-1 elements", []byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0x01}, "declares"},
		{"str32 claiming 4 GiB", []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}, "declares"},
		{"map16 longer than the input", []byte{0xde, 0x00, 0x10, 0xa1, 'a', 0x01}, ""},
		{"trailing bytes", append(append([]byte{}, good...), 0xc0), "trailing"},
		{"nesting too deep", deep, "nested deeper"},
		{"never-used code 0xc1", []byte{0xc1}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s sample
			err := Decode(tc.in, &s)
			switch {
			case tc.name == "well formed":
				if err != nil {
					t.Fatalf("Decode(good) = %v; want nil", err)
				}
				if s.Name != "n1" || len(s.GPUs) != 2 || s.Inner == nil || s.Inner.Name != "x" {
					t.Fatalf("Decode(good) gave %+v", s)
				}
			case err == nil:
				t.Fatalf("Decode(% x) = nil; want an error", tc.in)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("Decode(% x) = %v; want it to mention %q", tc.in, err, tc.wantErr)
			}
		})
	}
}

// FuzzDecode: no input panics or allocates beyond its own size's worth;
// what Decode accepts, msgpack re-encodes and Decode accepts again.
func FuzzDecode(f *testing.F) {
	good, _ := msgpack.Marshal(sample{Name: "n1", GPUs: []int{0, 1}, Attrs: map[string]string{"k": "v"}})
	f.Add(good)
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x91, 0x91, 0x91, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if err := Decode(b, &v); err != nil {
			return
		}
		again, err := msgpack.Marshal(v)
		if err != nil {
			return // e.g. a map with an unhashable key shape; decoding was still safe
		}
		var w any
		if err := Decode(again, &w); err != nil {
			t.Fatalf("re-encoded value % x refused: %v", again, err)
		}
	})
}
