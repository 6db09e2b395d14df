package plan

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/minfer/minfer/internal/smaps"
)

// TestWrittenPlanMapsHuge: a file dropped from the page cache after it was
// written (as Write does) and then mapped by mapFile is read back in 2 MiB
// folios mapped whole (FilePmdMapped in /proc/self/smaps), so a decode step
// does not take a TLB miss per 4 KiB of weights. It runs where the kernel
// can do that: Linux with transparent huge pages not "never" and the temp
// directory on ext4 (large folios since Linux 6.16) or xfs.
func TestWrittenPlanMapsHuge(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || bytes.Contains(b, []byte("[never]")) {
		t.Skip("transparent huge pages are off on this machine")
	}
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	var u unix.Utsname
	_ = unix.Uname(&u)
	var major, minor int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	switch {
	case st.Type == unix.XFS_SUPER_MAGIC:
	case st.Type == unix.EXT4_SUPER_MAGIC && (major > 6 || major == 6 && minor >= 16):
	default:
		t.Skipf("the temp directory's filesystem (type %#x, Linux %d.%d) has no large folios to map", st.Type, major, minor)
	}
	path := filepath.Join(dir, "x.bin")
	want := make([]byte, 16<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// Written 4 KiB at a time, the cached copy is in 4 KiB folios (as a
	// plan written through a buffer or copied by cp can be).
	for off := 0; off < len(want); off += 4096 {
		if _, err := f.Write(want[off : off+4096]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dropPageCache(path)
	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, unmap, err := mapFile(f, len(want))
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	if !bytes.Equal(got, want) {
		t.Fatal("mapped bytes differ from the file")
	}
	pmd := filePmdMapped(t, uintptr(unsafe.Pointer(&got[0])))
	t.Logf("%d of %d KiB mapped in huge pages", pmd, len(want)>>10)
	if pmd == 0 {
		t.Errorf("none of the %d MiB file read back after dropPageCache is mapped in huge pages", len(want)>>20)
	}
}

// filePmdMapped is the FilePmdMapped (KiB) of the mapping holding addr.
func filePmdMapped(t *testing.T, addr uintptr) int {
	t.Helper()
	kb, found, err := smaps.Field(addr, "FilePmdMapped")
	switch {
	case errors.Is(err, smaps.ErrNoMapping) || err == nil && !found:
		t.Fatalf("no mapping with FilePmdMapped at %#x in /proc/self/smaps", addr)
	case err != nil:
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	return kb
}
