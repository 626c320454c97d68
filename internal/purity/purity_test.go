package purity

import (
	"go/parser"
	"go/token"
	"testing"
)

// TestImpuritiesDetects checks that the purity check itself can fail.
func TestImpuritiesDetects(t *testing.T) {
	allowed := []string{"example.com/ok"}
	tests := []struct {
		name, src string
		want      int
	}{
		{"clean", `package p; import "time"; func f(t time.Time) time.Time { return t.Add(time.Second) }`, 0},
		{"allowed module", `package p; import "example.com/ok"; var _ = ok.X`, 0},
		{"time.Now", `package p; import "time"; var x = time.Now()`, 1},
		{"renamed time", `package p; import tm "time"; var x = tm.Since`, 1},
		{"time.Sleep", `package p; import "time"; func f() { time.Sleep(1) }`, 1},
		{"os", `package p; import "os"; var _ = os.Args`, 1},
		{"os/exec", `package p; import "os/exec"; var _ = exec.Command`, 1},
		{"net", `package p; import "net"; var _ net.Conn`, 1},
		{"net/http", `package p; import "net/http"; var _ http.Client`, 1},
		{"math/rand", `package p; import "math/rand"; var _ = rand.Int`, 1},
		{"math/rand/v2", `package p; import "math/rand/v2"; var _ = rand.Int`, 1},
		{"raft", `package p; import "github.com/hashicorp/raft"; var _ raft.FSM`, 1},
		{"go statement", `package p; func f() { go f() }`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", tt.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := Impurities(fset, f, allowed); len(got) != tt.want {
				t.Errorf("Impurities(%s) = %q; want %d findings", tt.name, got, tt.want)
			}
		})
	}
}

func TestCheckReadsADirectory(t *testing.T) {
	bad, files, err := Check(".", nil)
	if err != nil || files != 1 {
		t.Fatalf("Check(.) = %d files, %v; want 1 file", files, err)
	}
	// This package itself reads files, so it is not pure: the check says so.
	if len(bad) == 0 {
		t.Errorf("Check(.) found nothing in a package that imports os")
	}
}
