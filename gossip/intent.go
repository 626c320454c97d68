package gossip

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/memberlist"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/shoal-sched/shoal/wire"
)

// memberlist v0.5.4 does not tell its event delegate whether a node that
// went away left or failed (the Node it passes never has State set). So,
// like serf, a leaving node first broadcasts a leave intent as a gossip
// user message; a node that has an intent on record when memberlist
// reports the departure calls it a leave, otherwise a failure.

// msgType is the first byte of every user message. Append only.
type msgType uint8

const (
	msgLeaveIntent msgType = 1
)

// maxNodeNameLen bounds a node name carried in a message.
const maxNodeNameLen = 256

type leaveIntent struct {
	Node string `msgpack:"n"`
}

func encodeLeaveIntent(node string) ([]byte, error) {
	if node == "" || len(node) > maxNodeNameLen {
		return nil, fmt.Errorf("encode leave intent: node name of %d bytes: want 1..%d", len(node), maxNodeNameLen)
	}
	body, err := msgpack.Marshal(leaveIntent{Node: node})
	if err != nil {
		return nil, fmt.Errorf("encode leave intent of %q: %w", node, err)
	}
	return append([]byte{byte(msgLeaveIntent)}, body...), nil
}

// decodeMessage decodes a gossip user message. It never panics.
func decodeMessage(b []byte) (leaveIntent, error) {
	if len(b) == 0 {
		return leaveIntent{}, errors.New("decode message: empty")
	}
	switch msgType(b[0]) {
	case msgLeaveIntent:
		var li leaveIntent
		if err := wire.Decode(b[1:], &li); err != nil {
			return leaveIntent{}, fmt.Errorf("decode leave intent: %w", err)
		}
		if li.Node == "" || len(li.Node) > maxNodeNameLen {
			return leaveIntent{}, fmt.Errorf("decode leave intent: node name of %d bytes: want 1..%d", len(li.Node), maxNodeNameLen)
		}
		return li, nil
	default:
		return leaveIntent{}, fmt.Errorf("decode message: unknown type %d", b[0])
	}
}

// intentBroadcast is one queued leave intent. A newer intent for the same
// node replaces an older one in the queue.
type intentBroadcast struct {
	node   string
	msg    []byte
	notify chan struct{} // closed when fully transmitted or replaced; may be nil
	once   sync.Once
}

func (b *intentBroadcast) Name() string { return "leave/" + b.node }

func (b *intentBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(memberlist.NamedBroadcast)
	return ok && o.Name() == b.Name()
}

func (b *intentBroadcast) Message() []byte { return b.msg }

func (b *intentBroadcast) Finished() {
	b.once.Do(func() {
		if b.notify != nil {
			close(b.notify)
		}
	})
}
