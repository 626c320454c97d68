package pmi2

import (
	"bufio"
	"reflect"
	"strings"
	"testing"
)

// TestParse reads PMI-1's form (space-separated, Parse1) and PMI-2's
// (';'-terminated, ";;" an escaped ';', Parse2).
func TestParse(t *testing.T) {
	type parseCase struct {
		in   string
		want Msg
		err  string
	}
	for _, p := range []struct {
		name  string
		parse func([]byte) (Msg, error)
		cases []parseCase
	}{
		{"Parse1", Parse1, []parseCase{
			{in: "cmd=init pmi_version=1 pmi_subversion=1", want: Msg{Cmd: "init", Keys: []KV{{"pmi_version", "1"}, {"pmi_subversion", "1"}}}},
			{in: "cmd=get_maxes", want: Msg{Cmd: "get_maxes"}},
			{in: "cmd=put kvsname=7.0 key=bc-0 value=a=b=c", want: Msg{Cmd: "put", Keys: []KV{{"kvsname", "7.0"}, {"key", "bc-0"}, {"value", "a=b=c"}}}},
			{in: "cmd=put  key=k   value= ", want: Msg{Cmd: "put", Keys: []KV{{"key", "k"}, {"value", ""}}}},
			{in: "mcmd=spawn", want: Msg{Cmd: "mcmd:spawn"}},
			{in: "", err: "empty command"},
			{in: "key=k cmd=get", err: "want cmd"},
			{in: "cmd=get key", err: "not key=value"},
			{in: "cmd=get =v", err: "not key=value"},
			{in: "cmd=", err: "empty cmd"},
		}},
		{"Parse2", Parse2, []parseCase{
			{in: "cmd=fullinit;pmirank=3;pmijobid=7.0;threaded=FALSE;", want: Msg{Cmd: "fullinit", Keys: []KV{{"pmirank", "3"}, {"pmijobid", "7.0"}, {"threaded", "FALSE"}}}},
			{in: "cmd=kvs-fence", want: Msg{Cmd: "kvs-fence"}},
			{in: "cmd=kvs-put;key=k;value=a;;b;;;", want: Msg{Cmd: "kvs-put", Keys: []KV{{"key", "k"}, {"value", "a;b;"}}}},
			{in: "cmd=kvs-put;key=k;value=x=y;", want: Msg{Cmd: "kvs-put", Keys: []KV{{"key", "k"}, {"value", "x=y"}}}},
			{in: "cmd=kvs-get;key=;", want: Msg{Cmd: "kvs-get", Keys: []KV{{"key", ""}}}},
			{in: "", err: "empty command"},
			{in: "key=k;cmd=x;", err: "want cmd"},
			{in: "cmd=;", err: "empty cmd"},
			{in: "cmd=x;junk", err: "not key=value"},
			{in: "cmd=x;;=v;", want: Msg{Cmd: "x;=v"}},
			{in: "cmd=x;a;b=c;", err: "holds ';'"},
		}},
	} {
		for _, tc := range p.cases {
			got, err := p.parse([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("%s(%q) = %v, %v; want an error with %q", p.name, tc.in, got, err, tc.err)
				}
				continue
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s(%q) = %#v, %v; want %#v", p.name, tc.in, got, err, tc.want)
			}
		}
	}
}

func TestFormat(t *testing.T) {
	m := Msg{Cmd: "kvs-get-response"}.With("rc", "0").With("found", "TRUE").With("value", "(vector,(0,2,2));x")
	b, err := Format2(m)
	if want := "63    cmd=kvs-get-response;rc=0;found=TRUE;value=(vector,(0,2,2));;x;"; err != nil || string(b) != want {
		t.Errorf("Format2 = %q, %v; want %q", b, err, want)
	}
	b, err = Format1(Msg{Cmd: "maxes"}.With("rc", "0").With("kvsname_max", "256"))
	if want := "cmd=maxes rc=0 kvsname_max=256\n"; err != nil || string(b) != want {
		t.Errorf("Format1 = %q, %v; want %q", b, err, want)
	}
	for _, bad := range []Msg{{Cmd: "get_result", Keys: []KV{{"value", "a b"}}}, {Cmd: "x", Keys: []KV{{"", "v"}}}, {Cmd: "a b"}} {
		if b, err := Format1(bad); err == nil {
			t.Errorf("Format1(%#v) = %q; want refused", bad, b)
		}
	}
	if b, err := Format2(Msg{Cmd: "x", Keys: []KV{{"a;b", "v"}}}); err == nil {
		t.Errorf("Format2 of a key with ';' = %q; want refused", b)
	}
	if b, err := Format2(Msg{Cmd: "x", Keys: []KV{{"v", strings.Repeat("v", MaxFrame)}}}); err == nil {
		t.Errorf("Format2 of %d bytes = %d bytes; want refused", MaxFrame, len(b))
	}
}

func TestReadFrame(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "14    cmd=kvs-fence;", want: "cmd=kvs-fence;"},
		{in: "    14cmd=kvs-fence;", want: "cmd=kvs-fence;"},
		{in: "14cmd=kvs-fence;", err: "length field"},
		{in: "0     ", err: "length field"},
		{in: "-1    ", err: "length field"},
		{in: "999999x", err: "length field"},
		{in: "20    cmd=short", err: "unexpected EOF"},
		{in: "12", err: "unexpected EOF"},
	} {
		got, err := readFrame(bufio.NewReader(strings.NewReader(tc.in)))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("readFrame(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("readFrame(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", MaxLine+10)+"\n"), 16)
	if _, err := readLine(r); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("readLine of a long line: %v; want refused", err)
	}
}

// FuzzParse: no input makes a parser panic, and what a parser takes
// writes back (Format) to what it parses again the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"cmd=init pmi_version=1 pmi_subversion=1",
		"cmd=put kvsname=7.0 key=k value=v",
		"cmd=fullinit;pmirank=0;pmijobid=7.0;threaded=FALSE;",
		"cmd=kvs-put;key=k;value=a;;b;",
		"14    cmd=kvs-fence;",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := Parse1(data); err == nil {
			if b, err := Format1(m); err == nil {
				again, err := Parse1(b[:len(b)-1])
				if err != nil || !reflect.DeepEqual(again, m) {
					t.Fatalf("PMI-1 %q -> %#v -> %q -> %#v, %v", data, m, b, again, err)
				}
			}
		}
		if m, err := Parse2(data); err == nil {
			if b, err := Format2(m); err == nil {
				body, err := readFrame(bufio.NewReader(strings.NewReader(string(b))))
				if err != nil {
					t.Fatalf("PMI-2 %q -> %q: %v", data, b, err)
				}
				again, err := Parse2(body)
				if err != nil || !reflect.DeepEqual(again, m) {
					t.Fatalf("PMI-2 %q -> %#v -> %q -> %#v, %v", data, m, b, again, err)
				}
			}
		}
		_, _ = readFrame(bufio.NewReader(strings.NewReader(string(data))))
		_, _ = readLine(bufio.NewReaderSize(strings.NewReader(string(data)), 16))
		_ = decodeKVS(data, map[string]string{})
	})
}
