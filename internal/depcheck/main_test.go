package depcheck
import (
	_ "github.com/hashicorp/raft"
	_ "github.com/hashicorp/raft-boltdb/v2"
	_ "github.com/hashicorp/memberlist"
	_ "github.com/vmihailenco/msgpack/v5"
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/spf13/cobra"
	_ "github.com/cockroachdb/datadriven"
	_ "github.com/google/go-cmp/cmp"
	_ "pgregory.net/rapid"
	_ "go.etcd.io/bbolt"
	_ "github.com/hashicorp/go-metrics/compat"
)
