package exec

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/minfer/minfer/quant"
	"golang.org/x/sys/unix"
)

// residentPages counts the pages of b the kernel has mapped in (mincore).
func residentPages(t *testing.T, b []byte) (resident, total int) {
	t.Helper()
	page := unix.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident++
		}
	}
	return resident, len(vec)
}

// The KV cache costs resident memory only for the positions a sequence
// has written: New touches none of its pages (a heap allocation that
// reuses freed pages would be cleared, touching all of them), and a short
// sequence touches a small part.
func TestKVPagesTouchedOnlyWhenWritten(t *testing.T) {
	for _, kv := range []quant.Type{quant.F32, quant.F16} {
		t.Run(kv.String(), func(t *testing.T) {
			g, mem, f := compileFixture(t, "qwen2-synth-q8_0", kv)
			// Leave freed heap pages behind, as a load does, before New.
			junk := make([]byte, 64<<20)
			junk[len(junk)-1] = 1
			junk = nil
			runtime.GC()
			m, err := New(g, mem, f, Config{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if r, n := residentPages(t, m.kv); r != 0 {
				t.Fatalf("after New, %d of the KV cache's %d pages are resident, want none", r, n)
			}
			if _, err := m.Eval([]int32{620, 894, 134, 864, 856, 848}, []int32{0, 1, 2, 3, 4, 5}, []int32{5}); err != nil {
				t.Fatal(err)
			}
			r, n := residentPages(t, m.kv)
			if r == 0 || r > n/4 {
				t.Fatalf("after 6 positions of %d, %d of %d KV pages are resident", g.Params.NCtx, r, n)
			}
			t.Logf("after 6 of %d positions: %d of %d KV pages resident", g.Params.NCtx, r, n)
		})
	}
}
