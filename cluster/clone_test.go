package cluster

import "testing"

// TestCloneHelpers: the deep copies' helpers keep nil nil (an encoded
// snapshot tells nil from empty), and share no memory with the original.
func TestCloneHelpers(t *testing.T) {
	if clonePtr[Usage](nil) != nil {
		t.Errorf("clonePtr(nil) != nil")
	}
	u := &Usage{MaxRSS: 7}
	if c := clonePtr(u); c == u || *c != *u {
		t.Errorf("clonePtr(%p) = %p %+v; want a new pointer to %+v", u, c, c, *u)
	}
	deep := func(k *[]byte) { *k = append([]byte(nil), *k...) }
	if got := cloneEach(nil, deep); got != nil {
		t.Errorf("cloneEach(nil) = %#v; want nil", got)
	}
	if got := cloneEach([][]byte{}, deep); got == nil || len(got) != 0 {
		t.Errorf("cloneEach(empty) = %#v; want empty, not nil", got)
	}
	keys := [][]byte{{1}, {2}}
	got := cloneEach(keys, deep)
	got[0][0], got[1] = 9, nil
	if keys[0][0] != 1 || keys[1] == nil {
		t.Errorf("cloneEach shares memory with its argument: %v", keys)
	}
}
