package exec

import (
	"fmt"
	"io"
	"sort"
	"unsafe"

	"github.com/minfer/minfer/ir"
)

// The KV cache as state that outlives one sequence: a chat keeps the cache
// of the conversation so far and prefills only the new turn (Truncate to
// the prefix the new prompt shares with it, then Eval from Filled()), and a
// prompt cache file saves the first n positions (SaveKV) and restores them
// in a later run (LoadKV).
//
// Each KV region holds its positions as consecutive rows (position p at
// row p), so the first n positions of the cache are the first n rows of
// every region, taken in the graph's value order.

// Truncate keeps the first n positions of the cache (of slot 0) and forgets the rest:
// the next Eval continues at position n. Nothing is cleared (see Reset).
func (m *Model) Truncate(n int) error {
	if n < 0 || n > m.filled[0] {
		return fmt.Errorf("truncate the KV cache to %d positions: it holds %d", n, m.filled[0])
	}
	m.filled[0] = n
	return nil
}

// kvRegions returns the KV caches in value-ID order with the byte image of
// each.
func (m *Model) kvRegions() []kvRegion {
	regs := make([]kvRegion, 0, len(m.caches))
	for v, c := range m.caches {
		b := c.B
		if c.F != nil {
			b = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c.F))), len(c.F)*4)
		}
		regs = append(regs, kvRegion{v: v, b: b, row: len(b) / max(1, c.Rows)})
	}
	sort.Slice(regs, func(i, j int) bool { return regs[i].v.ID < regs[j].v.ID })
	return regs
}

type kvRegion struct {
	v   *ir.Value
	b   []byte
	row int // bytes per position
}

// KVLayout describes the cache's byte layout — per region its name, element
// type and bytes per position — so that a saved state is loaded only into
// a cache of the same layout.
func (m *Model) KVLayout() string {
	s := fmt.Sprintf("kv %s, %d positions:", m.kvk.Type, m.g.Params.NCtx)
	for _, r := range m.kvRegions() {
		s += fmt.Sprintf(" %s/%s/%d", r.v.Name, r.v.DType, r.row)
	}
	return s
}

// KVBytes is the size of the state of n positions as SaveKV writes it.
func (m *Model) KVBytes(n int) int64 {
	var t int64
	for _, r := range m.kvRegions() {
		t += int64(n) * int64(r.row)
	}
	return t
}

// SaveKV writes the cache contents of positions 0..n-1 (n ≤ Filled()),
// region after region.
func (m *Model) SaveKV(w io.Writer, n int) error {
	if n < 0 || n > m.filled[0] {
		return fmt.Errorf("save %d KV positions: the cache holds %d", n, m.filled[0])
	}
	for _, r := range m.kvRegions() {
		if _, err := w.Write(r.b[:n*r.row]); err != nil {
			return err
		}
	}
	return nil
}

// LoadKV reads a state of stored positions as SaveKV wrote it and makes
// its first n (n ≤ stored) the cache's contents: the next Eval continues at
// position n. On an error the cache is empty (Filled() = 0).
func (m *Model) LoadKV(r io.Reader, n, stored int) error {
	m.filled[0] = 0
	if n < 0 || n > stored || stored > m.g.Params.NCtx {
		return fmt.Errorf("load %d of %d saved KV positions: the cache holds at most %d", n, stored, m.g.Params.NCtx)
	}
	for _, reg := range m.kvRegions() {
		if _, err := io.ReadFull(r, reg.b[:n*reg.row]); err != nil {
			return fmt.Errorf("KV state of %s: %w", reg.v.Name, err)
		}
		if _, err := io.CopyN(io.Discard, r, int64(stored-n)*int64(reg.row)); err != nil {
			return fmt.Errorf("KV state of %s: %w", reg.v.Name, err)
		}
	}
	m.filled[0] = n
	return nil
}
