// Package smaps reads one field of one mapping from /proc/self/smaps
// (Linux), for the tests that check how memory ended up mapped (huge
// pages for the KV cache, the plan read back in large folios).
package smaps

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrNoMapping is returned when no mapping of the process holds the address.
var ErrNoMapping = errors.New("no mapping holds the address")

// Field returns the value (kB) of field, e.g. "AnonHugePages", of the
// mapping of this process that holds addr; found is false if that mapping
// has no such field. err is set when /proc/self/smaps cannot be read or no
// mapping holds addr (ErrNoMapping).
func Field(addr uintptr, field string) (kb int, found bool, err error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	return parse(f, addr, field)
}

// parse is Field over an smaps listing.
func parse(r io.Reader, addr uintptr, field string) (kb int, found bool, err error) {
	in, seen := false, false
	prefix := field + ":"
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uint64
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			if in { // the mapping ended without the field
				return 0, false, nil
			}
			in = uint64(addr) >= lo && uint64(addr) < hi
			seen = seen || in
			continue
		}
		if in && strings.HasPrefix(line, prefix) {
			f := strings.Fields(strings.TrimPrefix(line, prefix))
			if len(f) == 0 {
				return 0, false, fmt.Errorf("smaps: %q: no value", line)
			}
			v, err := strconv.Atoi(f[0])
			if err != nil {
				return 0, false, fmt.Errorf("smaps: %q: %v", line, err)
			}
			return v, true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, false, err
	}
	if seen {
		return 0, false, nil
	}
	return 0, false, ErrNoMapping
}
