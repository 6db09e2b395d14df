package cpu

import (
	"fmt"
	"sync"

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
	if plain := quant.Unpacked(t); plain != 0 {
		return getRowsPacked(t, plain), nil
	}
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

// x4RowBufs holds one row of plain blocks for getRowsPacked (no
// allocation in a decode step's lookup).
var x4RowBufs = sync.Pool{New: func() any { return new([]byte) }}

// getRowsPacked is the row gather of a table in a plan-only layout
// (packed: four, eight or sixteen rows of type plain's blocks together): each row unpacked
// from its group (quant.UnpackRow), then dequantized as plain — the same
// floats as the table's unpacked rows.
func getRowsPacked(packed, plain quant.Type) GetRowsFunc {
	gr := quant.GroupRows(packed)
	deq := quant.DequantFor(plain)
	ts := plain.TypeSize()
	return func(y []float32, table []byte, cols int, ids []int32, r0, r1 int) {
		nb := cols / plain.BlockSize()
		rs := nb * ts
		bp := x4RowBufs.Get().(*[]byte)
		if cap(*bp) < rs {
			*bp = make([]byte, rs)
		}
		row := (*bp)[:rs]
		for r := r0; r < r1; r++ {
			id := int(ids[r])
			g := id / gr
			if err := quant.UnpackRow(packed, row, table[g*gr*rs:(g+1)*gr*rs], nb, id%gr); err != nil {
				panic("cpu get_rows: " + err.Error())
			}
			deq(row, y[r*cols:(r+1)*cols])
		}
		x4RowBufs.Put(bp)
	}
}
