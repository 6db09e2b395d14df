package exec

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/minfer/minfer/internal/smaps"
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
	t.Setenv("MINFER_KV_HUGEPAGES", "") // the fixture's small regions keep small pages
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

// The KV cache is backed by huge pages only when its regions are large
// enough that a short conversation still leaves most of it untouched.
func TestKVHugePagesPolicy(t *testing.T) {
	t.Setenv("MINFER_KV_HUGEPAGES", "")
	mib := int64(1 << 20)
	for _, c := range []struct {
		name    string
		bytes   int64
		regions int
		want    bool
	}{
		{"qwen3-4b f16 4480 positions", 72 * 4480 * 2048, 72, true},
		{"qwen3-0.6b f16 4096 positions", 56 * 4096 * 2048, 56, true},
		{"qwen2.5-0.5b f16 4096 positions", 48 * 4096 * 256, 48, false},
		{"qwen3-4b f16 1024 positions", 72 * 1024 * 2048, 72, false},
		{"just below", 10 * (8*mib - 1), 10, false},
		{"exactly 8 MiB", 10 * 8 * mib, 10, true},
		{"no regions", 0, 0, false},
	} {
		if got := kvHugePages(c.bytes, c.regions); got != c.want {
			t.Errorf("%s: kvHugePages(%d, %d) = %v, want %v", c.name, c.bytes, c.regions, got, c.want)
		}
	}
	t.Setenv("MINFER_KV_HUGEPAGES", "0")
	if kvHugePages(72*4480*2048, 72) {
		t.Error("MINFER_KV_HUGEPAGES=0 did not turn huge pages off")
	}
	t.Setenv("MINFER_KV_HUGEPAGES", "1")
	if !kvHugePages(1<<20, 72) {
		t.Error("MINFER_KV_HUGEPAGES=1 did not force huge pages")
	}
}

// thpMode returns the bracketed choice of a /sys/kernel/mm/transparent_hugepage file.
func thpMode(t *testing.T, name string) string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/" + name)
	if err != nil {
		return ""
	}
	s := string(b)
	i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return ""
	}
	return s[i+1 : j]
}

// anonHuge returns the AnonHugePages (kB) of the mapping holding addr, from /proc/self/smaps.
func anonHuge(t *testing.T, addr uintptr) int { return smapsField(t, addr, "AnonHugePages:") }

// smapsField returns the number after field (e.g. "AnonHugePages:") of the
// mapping holding addr, from /proc/self/smaps (-1 if the mapping lacks it).
func smapsField(t *testing.T, addr uintptr, field string) int {
	t.Helper()
	kb, found, err := smaps.Field(addr, strings.TrimSuffix(field, ":"))
	switch {
	case errors.Is(err, smaps.ErrNoMapping):
		t.Fatalf("no mapping of %#x in /proc/self/smaps", addr)
	case err != nil:
		t.Skipf("no /proc/self/smaps: %v", err)
	case !found:
		return -1
	}
	return kb
}

// A huge mapping starts on a 2 MiB boundary and a write maps a huge page
// in; a small one maps small pages (where THP is left to madvise).
func TestKVHugePagesMapping(t *testing.T) {
	enabled, defrag := thpMode(t, "enabled"), thpMode(t, "defrag")
	if enabled != "always" && enabled != "madvise" {
		t.Skipf("transparent huge pages are %q here (/sys/kernel/mm/transparent_hugepage/enabled)", enabled)
	}
	if defrag == "never" || defrag == "defer" {
		t.Skipf("THP defrag is %q: a fault may not get a huge page at once", defrag)
	}
	b, release, ok := untouchedBytes(8*hugePage, true)
	if !ok {
		t.Fatal("huge mapping failed")
	}
	defer release()
	if a := addrOf(b); a%hugePage != 0 {
		t.Fatalf("huge mapping at %#x, not on a 2 MiB boundary", a)
	}
	if len(b) != 8*hugePage || cap(b) != len(b) {
		t.Fatalf("huge mapping has len %d cap %d, want %d", len(b), cap(b), 8*hugePage)
	}
	b[0], b[3*hugePage+5] = 1, 2
	if runtime.GOARCH != "amd64" && smapsField(t, addrOf(b), "THPeligible:") == 0 {
		// qemu-user (how CI runs the arm64 tests) accepts madvise but does
		// not pass MADV_HUGEPAGE on to the host kernel.
		t.Skip("the kernel does not see the advised mapping as THP-eligible: the advice did not reach it (qemu-user?)")
	}
	if kb := anonHuge(t, addrOf(b)); kb < 2048 {
		t.Fatalf("after two writes, %d kB of the advised mapping are huge pages, want ≥ 2048", kb)
	}
	if r, n := residentPages(t, b); r > n/2 {
		t.Fatalf("two writes made %d of %d pages resident", r, n)
	}
	if enabled == "madvise" {
		s, release, ok := untouchedBytes(8*hugePage, false)
		if !ok {
			t.Fatal("small mapping failed")
		}
		defer release()
		s[0] = 1
		if kb := anonHuge(t, addrOf(s)); kb != 0 {
			t.Fatalf("an unadvised mapping has %d kB of huge pages", kb)
		}
	}
}
