package plan

import (
	"os"

	"golang.org/x/sys/unix"
)

// adviseHuge advises a mapping for transparent huge pages (advice only).
func adviseHuge(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }

// dropPageCache asks the kernel to forget the cached pages of a file just
// written (and synced). The writes may have left it in the page cache in
// small folios, and a mapping of the file maps those 4 KiB at a time
// whatever advice it is given; read back on the first run instead, through
// mapFile's huge-page advice, it is cached in 2 MiB folios that every
// later run maps whole (where the filesystem has large folios: ext4 since
// Linux 6.16, xfs). Llama-3.1-8B Q4_K_M decode over a freshly written plan
// ran at half speed from the TLB misses (docs/PERFORMANCE.md). Errors are
// ignored: it is advice.
func dropPageCache(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
