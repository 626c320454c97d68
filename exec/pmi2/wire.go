package pmi2

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Bounds of one message.
const (
	// MaxLine bounds a PMI-1 line: MPICH's clients write at most 1024
	// bytes (PMIU_MAXLINE); a put of a full value with its key and KVS
	// name fits in this.
	MaxLine = 4096
	// MaxFrame bounds a PMI-2 command's body: its length field has six
	// digits, and no command but spawn (refused) comes near this.
	MaxFrame = 64 << 10
	// lenField is the width of a PMI-2 command's length.
	lenField = 6
)

// Msg is one PMI command or response: its cmd and its other keys, in
// order. Keys may repeat (PMI-2's spawn does); Get takes the first.
type Msg struct {
	Cmd  string
	Keys []KV
}

// KV is one key=value pair.
type KV struct{ Key, Value string }

// Get is the value of key and whether it is there.
func (m Msg) Get(key string) (string, bool) {
	for _, kv := range m.Keys {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

// With is m with key=value added.
func (m Msg) With(key, value string) Msg {
	m.Keys = append(m.Keys[:len(m.Keys):len(m.Keys)], KV{key, value})
	return m
}

// Parse1 parses a PMI-1 line (MPICH's simple PMI): "cmd=NAME k=v ...",
// pairs separated by spaces, without its newline. A value runs to the
// next space and may hold '='.
func Parse1(line []byte) (Msg, error) {
	var m Msg
	first := true
	for _, tok := range strings.Fields(string(line)) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok || k == "" {
			return Msg{}, fmt.Errorf("pmi-1: %q is not key=value", clip(tok))
		}
		if first {
			if k != "cmd" && k != "mcmd" {
				return Msg{}, fmt.Errorf("pmi-1: first key %q, want cmd", clip(k))
			}
			if k == "mcmd" {
				// A spawn's multi-line command: named so that it is refused.
				v = "mcmd:" + v
			}
			m.Cmd = v
			first = false
			continue
		}
		m.Keys = append(m.Keys, KV{k, v})
	}
	if first {
		return Msg{}, errors.New("pmi-1: empty command")
	}
	if m.Cmd == "" {
		return Msg{}, errors.New("pmi-1: empty cmd")
	}
	return m, nil
}

// Format1 is m as a PMI-1 line, with its newline. Values with a space or
// a newline cannot be written and are refused.
func Format1(m Msg) ([]byte, error) {
	var b strings.Builder
	b.WriteString("cmd=")
	b.WriteString(m.Cmd)
	if strings.ContainsAny(m.Cmd, " \n=") {
		return nil, fmt.Errorf("pmi-1: cmd %q cannot be written", clip(m.Cmd))
	}
	for _, kv := range m.Keys {
		if kv.Key == "" || strings.ContainsAny(kv.Key, " \n=") || strings.ContainsAny(kv.Value, " \n") {
			return nil, fmt.Errorf("pmi-1: %q=%q cannot be written", clip(kv.Key), clip(kv.Value))
		}
		b.WriteByte(' ')
		b.WriteString(kv.Key)
		b.WriteByte('=')
		b.WriteString(kv.Value)
	}
	b.WriteByte('\n')
	if b.Len() > MaxLine {
		return nil, fmt.Errorf("pmi-1: line of %d bytes, at most %d", b.Len(), MaxLine)
	}
	return []byte(b.String()), nil
}

// Parse2 parses a PMI-2 command's body (without its length): "cmd=NAME;
// k=v;...", each pair ended by ';' (the last one's may be missing), a
// ';' inside a value written ";;", as MPICH's simple PMI-2 does.
func Parse2(body []byte) (Msg, error) {
	var m Msg
	s := string(body)
	first := true
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return Msg{}, fmt.Errorf("pmi-2: %q is not key=value", clip(s))
		}
		k := s[:eq]
		if strings.IndexByte(k, ';') >= 0 {
			return Msg{}, fmt.Errorf("pmi-2: key %q holds ';'", clip(k))
		}
		s = s[eq+1:]
		var v strings.Builder
		for {
			i := strings.IndexByte(s, ';')
			if i < 0 {
				v.WriteString(s)
				s = ""
				break
			}
			v.WriteString(s[:i])
			if i+1 < len(s) && s[i+1] == ';' {
				v.WriteByte(';')
				s = s[i+2:]
				continue
			}
			s = s[i+1:]
			break
		}
		if first {
			if k != "cmd" {
				return Msg{}, fmt.Errorf("pmi-2: first key %q, want cmd", clip(k))
			}
			if v.Len() == 0 {
				return Msg{}, errors.New("pmi-2: empty cmd")
			}
			m.Cmd = v.String()
			first = false
			continue
		}
		m.Keys = append(m.Keys, KV{k, v.String()})
	}
	if first {
		return Msg{}, errors.New("pmi-2: empty command")
	}
	return m, nil
}

// Format2 is m as a PMI-2 command with its length field.
func Format2(m Msg) ([]byte, error) {
	var b strings.Builder
	put := func(k, v string) error {
		if k == "" || strings.ContainsAny(k, "=;") {
			return fmt.Errorf("pmi-2: key %q cannot be written", clip(k))
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strings.ReplaceAll(v, ";", ";;"))
		b.WriteByte(';')
		return nil
	}
	if m.Cmd == "" {
		return nil, errors.New("pmi-2: empty cmd")
	}
	if err := put("cmd", m.Cmd); err != nil {
		return nil, err
	}
	for _, kv := range m.Keys {
		if err := put(kv.Key, kv.Value); err != nil {
			return nil, err
		}
	}
	if b.Len() > MaxFrame {
		return nil, fmt.Errorf("pmi-2: command of %d bytes, at most %d", b.Len(), MaxFrame)
	}
	return fmt.Appendf(nil, "%-*d%s", lenField, b.Len(), b.String()), nil
}

// readLine reads one PMI-1 line, at most MaxLine bytes, without its
// newline.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return nil, fmt.Errorf("pmi-1: line longer than %d bytes", MaxLine)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// readFrame reads one PMI-2 command's body: six characters of decimal
// length (padded with spaces), then that many bytes.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var h [lenField]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(h[:])))
	if err != nil || n <= 0 || n > MaxFrame {
		return nil, fmt.Errorf("pmi-2: length field %q: want 1 to %d", h[:], MaxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
