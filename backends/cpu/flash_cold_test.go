//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/minfer/minfer/quant"
)

// BenchmarkFlashCold is the decode attention of one Qwen3-0.6B layer (16
// query heads, 8 KV heads of 128, one token) at 128 and 512 positions
// with its cache out of cache, as in a decode step: 28 layers' caches, and
// before each layer's attention an 8 MiB read (the layer's weights) evicts
// what the last one left. The metric us/layer times the attention calls
// alone. "touch" is the kernel as it runs; "notouch" skips
// faCache.touch, to show what the in-order read of each block saves.
func BenchmarkFlashCold(b *testing.B) {
	const layers, hd, Hkv, H = 28, 128, 8, 16
	evict := benchBytes(b, layers*(8<<20))
	for i := range evict {
		evict[i] = byte(i)
	}
	for _, kt := range []quant.Type{quant.F16, quant.Q8_0} {
		for _, P := range []int{128, 512} {
			r := rand.New(rand.NewPCG(39, 40))
			c := attnCase{H, Hkv, hd, 1, P - 1, P}
			q, k, v, pos := attnSetup(r, c)
			kv, _ := NewKV(kt)
			var kcs, vcs []*KVCache
			for range layers {
				for _, x := range []struct {
					src []float32
					to  *[]*KVCache
				}{{k, &kcs}, {v, &vcs}} {
					cache := fillCache(kv, x.src, P, Hkv*hd, hd, []int{0, Hkv})
					// The executor maps its cache with huge pages (exec's
					// kvHugePages); so does benchBytes.
					hb := benchBytes(b, len(cache.B))
					copy(hb, cache.B)
					cache.B = hb
					*x.to = append(*x.to, cache)
				}
			}
			s := NewAttnScratch(P, H/Hkv, hd)
			y := make([]float32, len(q))
			for _, touch := range []bool{true, false} {
				name := fmt.Sprintf("%s/P%d/touch", kt, P)
				if !touch {
					name = fmt.Sprintf("%s/P%d/notouch", kt, P)
				}
				b.Run(name, func(b *testing.B) {
					defer func(t bool) { flashTouch = t }(flashTouch)
					flashTouch = touch
					var spent time.Duration
					calls := 0
					var sink byte
					for b.Loop() {
						for l := range layers {
							w := evict[l*(8<<20) : (l+1)*(8<<20)]
							for i := 0; i < len(w); i += 64 {
								sink ^= w[i]
							}
							t0 := time.Now()
							kv.AttendFlash(y, q, kcs[l], vcs[l], pos, H, Hkv, hd, 0.0884, 0, Hkv, 0, 1, s)
							spent += time.Since(t0)
							calls++
						}
					}
					b.ReportMetric(float64(spent)/1e3/float64(calls), "us/layer")
					_ = sink
				})
			}
		}
	}
}
