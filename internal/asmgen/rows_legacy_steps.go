package main

import "fmt"

// The frame shared by the decode row kernels of the 32-element formats
// (Q8_0, Q5_0, Q4_0 weights against one Q8_0 activation row, both tiers:
// rows_q80.go, rows_legacy_avx2.go) and of Q3_K (against one Q8_K row:
// rows_q3k_avx2.go): a kernel is a step of n rows (each
// row its own accumulator, every block of the rows against the same
// activation block) described by an lrKernel, and this file writes the
// loops around it.
//
// The steps are spread (as rowsSpread for the K-quants): with q =
// rows/n, step i takes rows i, q+i, 2q+i, ..., (n-1)q+i, so each row of a
// step is one sequential stream through consecutive rows, which the
// hardware prefetcher follows, where n neighbouring rows read a block at a
// time (each row's block a row's length from the next one's) stay well
// below a plain streaming read out of DRAM (see rows4_avx2.go); each stream
// is also prefetched rowsSpreadDist ahead. The rows & (n-1) left after the
// q steps go as one group of neighbouring rows whose missing rows point at
// its last row (stored only once). A row's float steps are the same in
// either: only which rows share a step changes.

// lrRows are the GPRs holding a step's row bases (the first n).
var lrRows = []string{"R8", "R9", "R10", "R11", "AX", "BX", "CX", "DX"}

// lrKernel describes one kernel:
//
//	func name(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
//
// Registers the step body sees: the row bases (lrRows[:n]), R12 the block
// offset in the rows, DI the activation block, R13 blocks left, SI (the
// next group's first row, or the current step's row 0); R14 and R15 are
// the body's scratch, everything else the body's own.
type lrKernel struct {
	name string
	n    int // rows a step: 2, 4 or 8
	bs   int // weight block bytes
	abs  int // activation block bytes (0: a Q8_0 block, 34)
	// pf is the prefetch instruction of the step's streams ("": rowsPFOp).
	// The Q8_0 kernels use PREFETCHT2 (rows_q80.go): on the Zen 4 host,
	// measured against PREFETCHT0, it streamed an all-Q8_0 model's decode
	// about 10% faster on one thread, where the Q5_0 and K-quant kernels
	// went as fast or slower (docs/PERFORMANCE.md, sixteenth session).
	pf    string
	frame int // stack bytes the body uses, at 0..frame-1
	// consts loads the constant registers once; zero clears the
	// accumulators; block writes one block of the step's rows; finish
	// reduces the accumulators and returns the X registers holding the
	// rows' results (lane 0), in row order.
	consts, zero func(a *Asm)
	block        func(a *Asm, rows []string)
	finish       func(a *Asm) []string
}

// emit writes the kernel. Stack slots after the body's bytes (s(o) =
// frame+o): 0 the row stride wrb, 8 the next output, 16 the rows left,
// 24 the stride q·wrb of a spread step's rows, 32 the distance 4·q of its
// results, 40 the spread steps left.
func (k lrKernel) emit(a *Asm) {
	p := k.name
	s := func(o int) string { return fmt.Sprintf("%d(SP)", k.frame+o) }
	rows := lrRows[:k.n]
	lg := map[int]int{2: 1, 4: 2, 8: 3}[k.n]
	a.Blank()
	a.Raw("// func %s(w *byte, wrb int, a *byte, nb int, y *float32, rows int)", k.name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $%d-48", k.name, k.frame+48)
	a.I("MOVQ", "w+0(FP), SI")
	a.I("MOVQ", "wrb+8(FP), R14")
	a.I("MOVQ", "R14", s(0))
	a.I("MOVQ", "y+32(FP), R14")
	a.I("MOVQ", "R14", s(8))
	a.I("MOVQ", "rows+40(FP), R14")
	a.I("MOVQ", "R14", s(16))
	k.consts(a)
	// q = rows/n steps (none: straight to the group loop).
	a.I("MOVQ", s(16), "R14")
	a.I("SHRQ", fmt.Sprintf("$%d", lg), "R14")
	a.I("JZ", p+"group")
	a.I("MOVQ", "R14", s(40))
	a.I("MOVQ", "R14, R15")
	a.I("SHLQ", "$2, R15")
	a.I("MOVQ", "R15", s(32))
	a.I("MOVQ", s(0), "R15")
	a.I("IMULQ", "R15, R14")
	a.I("MOVQ", "R14", s(24))
	a.Label(p + "step")
	a.I("MOVQ", s(24), "R14")
	a.I("MOVQ", "SI", rows[0])
	for r := 1; r < k.n; r++ {
		a.I("LEAQ", fmt.Sprintf("(%s)(R14*1)", rows[r-1]), rows[r])
	}
	k.blocks(a, p+"sblock", true)
	res := k.finish(a)
	a.I("MOVQ", s(8), "R14")
	a.I("MOVQ", s(32), "R15")
	for r, x := range res {
		a.I("VMOVSS", x, "(R14)")
		if r < k.n-1 {
			a.I("ADDQ", "R15, R14")
		}
	}
	a.I("ADDQ", "$4", s(8))
	a.I("ADDQ", s(0), "SI")
	a.I("DECQ", s(40))
	a.I("JNZ", p+"step")
	// On to the rows & (n-1) left: SI and the output past the other
	// n-1 rows of each step.
	for _, o := range []int{24, 32} {
		a.I("MOVQ", s(o), "R14")
		a.I("SHLQ", fmt.Sprintf("$%d", lg), "R14")
		a.I("SUBQ", s(o), "R14")
		if o == 24 {
			a.I("ADDQ", "R14, SI")
		} else {
			a.I("ADDQ", "R14", s(8))
		}
	}
	a.I("ANDQ", fmt.Sprintf("$%d", k.n-1), s(16))
	a.Label(p + "group")
	a.I("MOVQ", s(16), "R13")
	a.I("TESTQ", "R13, R13")
	a.I("JLE", p+"done")
	a.I("MOVQ", s(0), "R14")
	a.I("MOVQ", "SI", rows[0])
	for r := 1; r < k.n; r++ {
		a.I("LEAQ", fmt.Sprintf("(%s)(R14*1)", rows[r-1]), rows[r])
		a.I("CMPQ", fmt.Sprintf("R13, $%d", r+1))
		a.I("CMOVQLT", rows[r-1], rows[r])
	}
	a.I("LEAQ", fmt.Sprintf("(SI)(R14*%d), SI", k.n))
	k.blocks(a, p+"block", false)
	res = k.finish(a)
	a.I("MOVQ", s(8), "R14")
	a.I("MOVQ", s(16), "R13")
	a.I("VMOVSS", res[0], "(R14)")
	for r := 1; r < k.n; r++ {
		a.I("CMPQ", fmt.Sprintf("R13, $%d", r+1))
		a.I("JLT", p+"done")
		a.I("VMOVSS", res[r], fmt.Sprintf("%d(R14)", 4*r))
	}
	a.I("ADDQ", fmt.Sprintf("$%d", 4*k.n), s(8))
	a.I("SUBQ", fmt.Sprintf("$%d", k.n), s(16))
	a.I("JMP", p+"group")
	a.Label(p + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// prefetch writes the kernel's prefetch of the line at addr.
func (k lrKernel) prefetch(a *Asm, addr string) {
	if k.pf == "" || rowsPFOp == "NOP" {
		pfI(a, addr)
		return
	}
	a.I(k.pf, addr)
}

// blocks writes the block loop of one step (label l): a spread step
// prefetches each of its streams rowsSpreadDist ahead (the lines of a
// row's block); a group of neighbouring rows sweeps the next group's bytes
// linearly, rowsPF past their start, as its own are read.
func (k lrKernel) blocks(a *Asm, l string, spread bool) {
	rows := lrRows[:k.n]
	a.I("MOVQ", "a+16(FP), DI")
	a.I("MOVQ", "nb+24(FP), R13")
	a.I("XORL", "R12, R12")
	k.zero(a)
	a.Label(l)
	if spread {
		// a line per row and block (two for the K-quants' blocks of more
		// than 64 bytes)
		for _, r := range rows {
			for i := 0; i < (k.bs+63)/64; i++ {
				k.prefetch(a, fmt.Sprintf("%d(%s)(R12*1)", rowsSpreadDist+64*i, r))
			}
		}
	} else {
		for i := 0; i < (k.n*k.bs+63)/64; i++ {
			k.prefetch(a, fmt.Sprintf("%d(SI)(R12*%d)", rowsPF+64*i, k.n))
		}
	}
	k.block(a, rows)
	a.I("ADDQ", fmt.Sprintf("$%d, R12", k.bs))
	abs := k.abs
	if abs == 0 {
		abs = 34
	}
	a.I("ADDQ", fmt.Sprintf("$%d, DI", abs))
	a.I("DECQ", "R13")
	a.I("JNZ", l)
}
