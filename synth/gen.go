package synth

import (
	"math"
	"sync"

	"github.com/minfer/minfer/quant"
)

// Weight distributions (the fixture models' values, README section 2): the
// std of each matrix role, chosen so that logits have std ≈ 3 and attention
// is clearly non-uniform; scaled by sqrt(256/n_embd) for other widths.
const (
	stdEmbd   = 0.2
	stdOutput = 0.18
	stdQK     = 0.1
	stdVO     = 0.05
	stdFFN    = 0.05
	stdBias   = 0.05

	normMean   = 1.0 // RMSNorm gains: normMean + N(0, normSpread)
	qkNormMean = 1.5 // qwen3 q/k norm gains: qkNormMean + N(0, normSpread)
	normSpread = 0.1
)

// distribution returns the mean and std of the weights of role r. The
// matrix and bias std values are scaled by sqrt(256/n_embd); the norm gains
// are not (they are multiplicative, independent of the width).
func distribution(p Preset, r role) (mean, std float64) {
	scale := math.Sqrt(256 / float64(p.NEmbd))
	switch r {
	case roleEmbd:
		return 0, stdEmbd * scale
	case roleOutput:
		return 0, stdOutput * scale
	case roleQ, roleK:
		return 0, stdQK * scale
	case roleV, roleO:
		return 0, stdVO * scale
	case roleGate, roleUp, roleDown:
		return 0, stdFFN * scale
	case roleBias:
		return 0, stdBias * scale
	case roleQKNorm:
		return qkNormMean, normSpread
	}
	return normMean, normSpread
}

// tensorSeed derives the seed of a tensor from the model seed and its name.
func tensorSeed(seed uint64, name string) uint64 { return mix64(seed, fnv64(name)) }

// fillRow writes the random values of row `row` of a tensor: each row has its
// own generator, so rows can be made in any order or in parallel.
func fillRow(dst []float32, tseed uint64, row int, mean, std float64) {
	r := newRNG(mix64(tseed, uint64(row)))
	m, s := float32(mean), float32(std)
	for i := range dst {
		// The explicit conversion rounds the product, so no compiler may
		// fuse it into an FMA: the bytes stay the same on every target.
		dst[i] = m + float32(s*float32(r.normal()))
	}
}

// chunkElems is the number of weights (whole rows, at least one) the
// streaming writer generates as one unit of work: small enough that the
// chunks in flight hold a few MB, large enough that handing them out costs
// nothing next to generating them.
var chunkElems int64 = 1 << 20

// genRows writes rows [lo, hi) of tensor s in type t to dst (exactly their
// encoded bytes): random rows, quantized one by one with llama.cpp's
// reference quantizers. f is a float32 scratch row of the tensor's width.
// Every row has its own seed, so the bytes do not depend on how a tensor is
// cut into chunks or which goroutine makes them.
func genRows(p Preset, s spec, t quant.Type, seed uint64, lo, hi int, f []float32, dst []byte) error {
	ne0 := int(s.dims[0])
	rs, err := t.RowSize(ne0)
	if err != nil {
		return err
	}
	mean, std := distribution(p, s.role)
	tseed := tensorSeed(seed, s.name)
	for r := lo; r < hi; r++ {
		if s.role == roleRopeFreqs {
			copy(f[:ne0], Llama3RopeFreqs(p.Llama3Rope, p.RopeBase, p.HeadDim))
		} else {
			fillRow(f[:ne0], tseed, r, mean, std)
		}
		if err := quant.Quantize(t, f[:ne0], dst[(r-lo)*rs:(r-lo+1)*rs]); err != nil {
			return err
		}
	}
	return nil
}

// genTensor makes the whole data of tensor s in type t with `workers`
// goroutines (the bytes do not depend on their number). Write streams
// instead; this is for tests and benchmarks.
func genTensor(p Preset, s spec, t quant.Type, seed uint64, workers int) ([]byte, error) {
	ne0 := int(s.dims[0])
	rows := int(s.elements() / int64(ne0))
	rs, err := t.RowSize(ne0)
	if err != nil {
		return nil, err
	}
	out := make([]byte, rows*rs)
	workers = max(1, min(workers, rows))
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		lo, hi := rows*w/workers, rows*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = genRows(p, s, t, seed, lo, hi, make([]float32, ne0), out[lo*rs:hi*rs])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
