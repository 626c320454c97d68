package purity

import "testing"

// recorder is a T that keeps what the test reports.
type recorder struct{ errors, fatals int }

func (*recorder) Helper()                 {}
func (r *recorder) Error(...any)          { r.errors++ }
func (r *recorder) Fatal(...any)          { r.fatals++ }
func (r *recorder) Fatalf(string, ...any) { r.fatals++ }

// TestTestFails: Test fails on an impure package (this one reads files)
// and when it read fewer files than the package must have.
func TestTestFails(t *testing.T) {
	var r recorder
	Test(&r, 2)
	if r.errors == 0 || r.fatals != 1 {
		t.Errorf("Test(., 2 files) reported %d errors, %d fatals; want the impurities and one fatal (1 file read)", r.errors, r.fatals)
	}
}
