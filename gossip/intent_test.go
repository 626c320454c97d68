package gossip

import (
	"strings"
	"testing"
)

func TestLeaveIntentRoundTrip(t *testing.T) {
	b, err := encodeLeaveIntent("node-7")
	if err != nil {
		t.Fatal(err)
	}
	li, err := decodeMessage(b)
	if err != nil || li.Node != "node-7" {
		t.Fatalf("decodeMessage(encodeLeaveIntent(node-7)) = %+v, %v", li, err)
	}
	if _, err := encodeLeaveIntent(""); err == nil {
		t.Error("encodeLeaveIntent(\"\") = nil error; want one")
	}
	if _, err := encodeLeaveIntent(strings.Repeat("n", maxNodeNameLen+1)); err == nil {
		t.Error("encodeLeaveIntent(long) = nil error; want one")
	}
}

func TestDecodeMessageRejects(t *testing.T) {
	good, err := encodeLeaveIntent("a")
	if err != nil {
		t.Fatal(err)
	}
	checkRejects(t, "decodeMessage", func(b []byte) error { _, err := decodeMessage(b); return err }, []rejectCase{
		{"empty", nil, "empty"},
		{"unknown type", []byte{9, 0x80}, "unknown type 9"},
		{"no body", []byte{byte(msgLeaveIntent)}, "decode leave intent"},
		{"trailing", append(append([]byte{}, good...), 0xc0), "1 trailing bytes"},
		{"empty name", []byte{byte(msgLeaveIntent), 0x80}, "node name of 0 bytes"},
	})
}

// User messages arrive from the network: never panic; what decodes
// re-encodes to the same intent.
func FuzzDecodeMessage(f *testing.F) {
	good, err := encodeLeaveIntent("node-1")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{byte(msgLeaveIntent), 0x81, 0xa1, 'n', 0xdb, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{2, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		li, err := decodeMessage(b)
		if err != nil {
			return
		}
		enc, err := encodeLeaveIntent(li.Node)
		if err != nil {
			t.Fatalf("decoded %+v but cannot re-encode: %v", li, err)
		}
		li2, err := decodeMessage(enc)
		if err != nil || li2 != li {
			t.Fatalf("round trip of %+v = %+v, %v", li, li2, err)
		}
	})
}
