package synth

import (
	"fmt"
	"io"

	"github.com/minfer/minfer/frontends/gguf"
)

// WriteSkeleton writes the GGUF file of o's preset with the real metadata,
// tensor names, shapes and types, but all-zero tensor data: a file that
// loads and builds the same graph as Write's, made in the time it takes to
// write the bytes, for tests and tools that look at shapes only (graphs,
// schedules, memory plans) and never at the numbers.
func WriteSkeleton(w io.Writer, o Options) error {
	m, err := build(o)
	if err != nil {
		return err
	}
	gw := gguf.NewWriter()
	for _, e := range m.kvs {
		gw.AddKV(e.key, e.value)
	}
	var zero []byte
	for _, t := range m.plan {
		if int64(len(zero)) < t.Bytes {
			zero = make([]byte, t.Bytes)
		}
	}
	for i, s := range tensorSpecs(m.p) {
		t := m.plan[i]
		if err := gw.AddTensor(s.name, t.Type, s.dims, zero[:t.Bytes]); err != nil {
			return fmt.Errorf("synth: %w", err)
		}
	}
	_, err = gw.WriteTo(w)
	return err
}
