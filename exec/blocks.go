package exec

import (
	"sync/atomic"

	"github.com/minfer/minfer/backends/cpu"
)

// Decode attention split by KV block. A decode step's attention is split by
// KV head inside the group that computes its heads' q, k and v; with fewer
// KV heads than workers (or a number the workers cannot share evenly) at a
// long context, most of the attention's time would go to the workers that
// hold a head while the others wait. Then the group runs without its
// attention, and after one more barrier the workers take (KV head, block)
// pieces as they become free: each computes the flash partial of one
// block of FlashBlock positions (cpu.FlashBlockPartial), and the worker
// that finishes a head's last piece merges that head's partials in block
// order (cpu.FlashMergeHead). A block's partial depends only on positions,
// never on who computes it, so the output has the bits of the split by
// head for any thread count and any timing.

// blockAttn is one flash attention step's split by KV block.
type blockAttn struct {
	attached bool // the step ends its group (only then may it run after it)
	active   bool // this call runs it split by block
	hkv, nb  int  // KV heads; blocks of this call's token
	part     *cpu.FlashPartials
	piece    func(wk *worker, kh, b int)
	merge    func(wk *worker, kh int)
	next     atomic.Int64   // next piece to take
	done     []atomic.Int64 // per KV head: pieces finished
}

// forceBlocks makes every decode call with several workers split its flash
// attention by block (tests).
var forceBlocks bool

// blockAttn returns a new split by block whose partials are shared with
// every other flash attention of the same shape (the layers run one after
// the other).
func (b *binder) blockAttn(nHead, nHeadKV, headDim int) *blockAttn {
	m := b.m
	key := [2]int{nHead, headDim}
	if m.fparts == nil {
		m.fparts = map[[2]int]*cpu.FlashPartials{}
	}
	p, ok := m.fparts[key]
	if !ok {
		p = cpu.NewFlashPartials(m.nctx, nHead, headDim)
		m.fparts[key] = p
	}
	return &blockAttn{hkv: nHeadKV, part: p, done: make([]atomic.Int64, nHeadKV)}
}

// useBlocks reports whether a decode token at position pos with hkv KV
// heads on W workers splits its attention by block: a context of several
// blocks, and fewer KV heads than two per worker that the workers cannot
// share evenly.
func useBlocks(pos int32, hkv, W int) bool {
	if W < 2 || cpu.FlashBlocks(pos) < 2 {
		return false
	}
	return forceBlocks || (hkv < 2*W && hkv%W != 0)
}

// planBlocks decides, before the workers start, which attention steps of
// prog run split by block in this call, and readies their counters.
func (m *Model) planBlocks(prog *program) {
	one := m.T == 1 && len(m.seqs) == 1
	for gi := range prog.groups {
		ba := prog.groups[gi].blocks
		if ba == nil {
			continue
		}
		ba.active = one && ba.attached && useBlocks(m.pos[0], ba.hkv, m.nw)
		if !ba.active {
			continue
		}
		ba.nb = cpu.FlashBlocks(m.pos[0])
		ba.next.Store(0)
		for i := range ba.done {
			ba.done[i].Store(0)
		}
	}
}

// runBlocks is worker wk's part of a split by block: pieces (block-major,
// so the workers start on different heads of the same rows) until none is
// left, merging each head whose last piece it finished.
func (m *Model) runBlocks(ba *blockAttn, gi int, wk *worker) {
	defer m.recoverFault(gi)
	n := int64(ba.hkv * ba.nb)
	for {
		if stallHook != nil {
			stallHook(wk.id)
		}
		i := ba.next.Add(1) - 1
		if i >= n {
			return
		}
		kh, b := int(i)%ba.hkv, int(i)/ba.hkv
		ba.piece(wk, kh, b)
		if ba.done[kh].Add(1) == int64(ba.nb) {
			ba.merge(wk, kh)
		}
	}
}
