package cpu

import (
	"fmt"

	"github.com/minfer/minfer/quant"
)

// GetRowsF32 copies table rows: y row r = table row ids[r] for r in r0..r1
// (y [len(ids)][cols], table [V][cols]).
func GetRowsF32(y, table []float32, cols int, ids []int32, r0, r1 int) {
	for r := r0; r < r1; r++ {
		id := int(ids[r])
		copy(y[r*cols:(r+1)*cols], table[id*cols:(id+1)*cols])
	}
}

// GetRowsFunc dequantizes table rows: y row r = dequant(table row ids[r])
// for r in r0..r1, with table in its type's row layout.
type GetRowsFunc func(y []float32, table []byte, cols int, ids []int32, r0, r1 int)

// GetRowsQuant returns the row gather for a table (token embeddings) of
// type t, or an error naming the type when it cannot be dequantized.
func GetRowsQuant(t quant.Type) (GetRowsFunc, error) {
	deq := quant.DequantFor(t)
	if deq == nil {
		return nil, fmt.Errorf("cpu get_rows: unsupported table type %s", t)
	}
	bs, ts := t.BlockSize(), t.TypeSize()
	return func(y []float32, table []byte, cols int, ids []int32, r0, r1 int) {
		rs := cols / bs * ts
		for r := r0; r < r1; r++ {
			id := int(ids[r])
			deq(table[id*rs:(id+1)*rs], y[r*cols:(r+1)*cols])
		}
	}, nil
}
