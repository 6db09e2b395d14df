//go:build !linux

package plan

// adviseHuge does nothing where transparent huge pages are not known.
func adviseHuge(b []byte) {}

// dropPageCache does nothing where mappings are not advised for huge pages.
func dropPageCache(path string) {}
