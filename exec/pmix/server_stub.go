//go:build !pmix || !cgo

package pmix

// Server is the PMIx server of one step's ranks on this node; this build
// has none.
type Server struct{}

// Start fails: this shoal was built without PMIx.
func Start(Config) (*Server, error) { return nil, ErrNotBuilt }

// Env is no environment.
func (*Server) Env(int) []string { return nil }

// Close does nothing.
func (*Server) Close() {}
