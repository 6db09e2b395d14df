package main

import "fmt"

// The element-wise float32 add and multiply of whole vectors, printed into
// backends/cpu/ew_amd64.s (AddCols, MulCols in backends/cpu/ew.go): one
// kernel shape for each operation and width.
func init() {
	register("ew_amd64.s", "!purego", func(a *Asm) {
		a.Blank()
		a.Comment(`Element-wise float32 add and multiply of whole vectors (AddCols,
MulCols: the residual and bias adds, the broadcast scales). One IEEE add
or multiply per element, whatever the width, so the AVX2 and AVX-512
forms give the Go loop's bits; tails run one element at a time.`)
		for _, w := range []struct {
			tier, reg string
			lanes     int
		}{{"AVX2", "Y", 8}, {"AVX512", "Z", 16}} {
			for _, op := range []struct{ name, vop, sop, sym string }{
				{"addF32", "VADDPS", "VADDSS", "+"},
				{"mulvF32", "VMULPS", "VMULSS", "·"},
			} {
				ewKernel(a, op.name+w.tier, op.vop, op.sop, op.sym, w.reg, w.lanes)
			}
		}
	})
}

// ewKernel writes y[i] = a[i] op b[i] for i < n (y may alias a or b): four
// registers of lanes floats a step, then one register a step, then one
// element at a time. Registers: DI y, SI a, DX b, BX n, AX i.
func ewKernel(a *Asm, name, vop, sop, sym, reg string, lanes int) {
	a.Blank()
	a.Raw("// func %s(y, a, b *float32, n int)", name)
	a.Comment(fmt.Sprintf("y[i] = a[i] %s b[i] for i < n (y may alias a or b), %d elements a step in\nfour %sMM registers.", sym, 4*lanes, reg))
	a.Raw("TEXT ·%s(SB), NOSPLIT, $0-32", name)
	l := name + "_"
	a.I("MOVQ", "y+0(FP)", "DI")
	a.I("MOVQ", "a+8(FP)", "SI")
	a.I("MOVQ", "b+16(FP)", "DX")
	a.I("MOVQ", "n+24(FP)", "BX")
	a.I("XORQ", "AX", "AX")
	a.I("MOVQ", "BX", "R9")
	a.I("ANDQ", fmt.Sprintf("$-%d", 4*lanes), "R9")
	a.I("CMPQ", "AX", "R9")
	a.I("JGE", l+"tail")
	a.Label(l + "loop")
	vb := 4 * lanes // bytes per register
	for k := 0; k < 4; k++ {
		a.I("VMOVUPS", fmt.Sprintf("%s(SI)(AX*4)", off(k*vb)), fmt.Sprintf("%s%d", reg, k))
	}
	for k := 0; k < 4; k++ {
		r := fmt.Sprintf("%s%d", reg, k)
		a.I(vop, fmt.Sprintf("%s(DX)(AX*4)", off(k*vb)), r, r)
	}
	for k := 0; k < 4; k++ {
		a.I("VMOVUPS", fmt.Sprintf("%s%d", reg, k), fmt.Sprintf("%s(DI)(AX*4)", off(k*vb)))
	}
	a.I("ADDQ", fmt.Sprintf("$%d", 4*lanes), "AX")
	a.I("CMPQ", "AX", "R9")
	a.I("JLT", l+"loop")
	a.Label(l + "tail")
	a.I("MOVQ", "BX", "R9")
	a.I("ANDQ", fmt.Sprintf("$-%d", lanes), "R9")
	a.Label(l + "tailv")
	a.I("CMPQ", "AX", "R9")
	a.I("JGE", l+"tail1")
	a.I("VMOVUPS", "(SI)(AX*4)", reg+"0")
	a.I(vop, "(DX)(AX*4)", reg+"0", reg+"0")
	a.I("VMOVUPS", reg+"0", "(DI)(AX*4)")
	a.I("ADDQ", fmt.Sprintf("$%d", lanes), "AX")
	a.I("JMP", l+"tailv")
	a.Label(l + "tail1")
	a.I("CMPQ", "AX", "BX")
	a.I("JGE", l+"done")
	a.I("VMOVSS", "(SI)(AX*4)", "X0")
	a.I(sop, "(DX)(AX*4)", "X0", "X0")
	a.I("VMOVSS", "X0", "(DI)(AX*4)")
	a.I("INCQ", "AX")
	a.I("JMP", l+"tail1")
	a.Label(l + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// off prints a byte offset for an address ("" for 0).
func off(b int) string {
	if b == 0 {
		return ""
	}
	return fmt.Sprint(b)
}
