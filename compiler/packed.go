package compiler

import (
	"fmt"

	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
)

// PackedSource serves the weights of a graph compiled in memory with
// PackWeights set: the tensors the pack-weights pass gave a plan-only
// layout (quant.Unpacked) are packed from Src's GGUF bytes into a copy when
// asked for, the others are Src's bytes as they are — what a plan file
// compiled with the same option holds, without writing one (as llama.cpp
// repacks at load).
type PackedSource struct {
	Src interface {
		WeightBytes(name string) ([]byte, error)
	}
	G *ir.Graph
}

// WeightBytes returns the named tensor's bytes in the layout the graph
// reads.
func (s PackedSource) WeightBytes(name string) ([]byte, error) {
	b, err := s.Src.WeightBytes(name)
	if err != nil {
		return nil, err
	}
	for _, v := range s.G.Weights() {
		if v.Source != name || quant.Unpacked(v.DType) == 0 {
			continue
		}
		if len(v.Shape) != 2 {
			return nil, fmt.Errorf("weight %q: a packed layout needs a matrix, the graph has shape %v", name, v.Shape)
		}
		out := make([]byte, len(b))
		if err := quant.Pack(v.DType, out, b, int(v.Shape[1])); err != nil {
			return nil, fmt.Errorf("weight %q: %w", name, err)
		}
		return out, nil
	}
	return b, nil
}
