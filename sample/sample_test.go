package sample

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// logitsOf returns log-probabilities, so softmax(logitsOf(p)) == p.
func logitsOf(p ...float64) []float32 {
	l := make([]float32, len(p))
	for i, v := range p {
		l[i] = float32(math.Log(v))
	}
	return l
}

// randLogits fills n logits from a fixed-seed generator: roughly normal
// values scaled by scale, quantized to step (>0) to create ties.
func randLogits(seed uint64, n int, scale, step float64) []float32 {
	var r rng
	r.seed(seed)
	l := make([]float32, n)
	for i := range l {
		// Irwin–Hall approximation of a standard normal.
		var g float64
		for range 12 {
			g += r.float64()
		}
		v := (g - 6) * scale
		if step > 0 {
			v = math.Round(v/step) * step
		}
		l[i] = float32(v)
	}
	return l
}

func mustNew(t testing.TB, p Params, n int) *Sampler {
	t.Helper()
	s, err := New(p, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func greedyParams() Params {
	p := DefaultParams()
	p.Temperature = 0
	return p
}

func TestGreedy(t *testing.T) {
	ninf := float32(math.Inf(-1))
	tests := []struct {
		name   string
		logits []float32
		want   int32
	}{
		{"single", []float32{0.3}, 0},
		{"first", []float32{5, 1, 2}, 0},
		{"middle", []float32{1, 7, 2, 6.99}, 1},
		{"last", []float32{-3, -2, -1}, 2},
		{"all negative", []float32{-5, -0.5, -9}, 1},
		{"tie lowest id", []float32{1, 4, 2, 4, 4}, 1},
		{"all equal", []float32{2, 2, 2}, 0},
		{"neg inf", []float32{ninf, ninf, -100, ninf}, 2},
		{"all neg inf", []float32{ninf, ninf}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, greedyParams(), len(tc.logits))
			for range 3 { // greedy is stateless without penalties
				if got := s.Sample(tc.logits); got != tc.want {
					t.Fatalf("Sample = %d, want %d", got, tc.want)
				}
			}
		})
	}
}

func TestArgmaxMatchesReference(t *testing.T) {
	for seed := range uint64(30) {
		n := 1 + int(seed*37)%300
		l := randLogits(seed, n, 2, 0.5) // coarse steps: many ties
		want := 0
		for i, v := range l {
			if v > l[want] {
				want = i
			}
		}
		if got := argmax(l); int(got) != want {
			t.Fatalf("seed %d n %d: argmax = %d, want %d", seed, n, got, want)
		}
	}
}

func TestGreedyUsesPenalizedLogits(t *testing.T) {
	p := greedyParams()
	p.RepeatPenalty = 2
	s := mustNew(t, p, 3)
	logits := []float32{3, 2, 1}
	if got := s.Sample(logits); got != 0 {
		t.Fatalf("before Accept: %d, want 0", got)
	}
	s.Accept(0) // 3/2 = 1.5 < 2
	if got := s.Sample(logits); got != 1 {
		t.Fatalf("after Accept(0): %d, want 1", got)
	}
	s.Reset()
	if got := s.Sample(logits); got != 0 {
		t.Fatalf("after Reset: %d, want 0", got)
	}
}

func sequence(s *Sampler, logits []float32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = s.Sample(logits)
		s.Accept(out[i])
	}
	return out
}

func TestDeterminism(t *testing.T) {
	logits := randLogits(1, 1000, 2, 0)
	configs := []struct {
		name string
		mod  func(*Params)
	}{
		{"default", func(*Params) {}},
		{"no truncation", func(p *Params) { p.TopK, p.TopP, p.MinP, p.Temperature = 0, 1, 0, 1 }},
		{"top-p only", func(p *Params) { p.TopK, p.MinP = 0, 0 }},
		{"penalties", func(p *Params) { p.RepeatPenalty, p.FrequencyPenalty, p.PresencePenalty = 1.3, 0.2, 0.1 }},
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			p := DefaultParams()
			cfg.mod(&p)
			a := sequence(mustNew(t, p, len(logits)), logits, 200)
			s := mustNew(t, p, len(logits))
			b := sequence(s, logits, 200)
			if !slices.Equal(a, b) {
				t.Fatalf("same seed gave different sequences:\n%v\n%v", a, b)
			}
			s.Reset()
			if c := sequence(s, logits, 200); !slices.Equal(a, c) {
				t.Fatalf("Reset did not reproduce the sequence:\n%v\n%v", a, c)
			}
			p.Seed++
			if d := sequence(mustNew(t, p, len(logits)), logits, 200); slices.Equal(a, d) {
				t.Fatalf("different seeds gave the same sequence %v", a)
			}
		})
	}
}

// TestRNGVectors checks the generator against published test vectors, so
// that the token stream for a given seed cannot drift between versions.
func TestRNGVectors(t *testing.T) {
	x := uint64(0)
	for i, w := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f, 0xf88bb8a8724c81ec} {
		if g := splitmix64(&x); g != w {
			t.Fatalf("splitmix64 output %d = %#x, want %#x", i, g, w)
		}
	}
	r := rng{s: [4]uint64{1, 2, 3, 4}}
	for i, w := range []uint64{11520, 0, 1509978240, 1215971899390074240} {
		if g := r.next(); g != w {
			t.Fatalf("xoshiro256** output %d = %d, want %d", i, g, w)
		}
	}
}

func TestTopK1EqualsGreedy(t *testing.T) {
	for seed := range uint64(20) {
		logits := randLogits(seed, 5000, 3, 0.25) // quantized: plenty of ties
		for _, pen := range []bool{false, true} {
			p := DefaultParams()
			p.TopK, p.Temperature, p.Seed = 1, 1.5, seed
			g := greedyParams()
			if pen {
				p.RepeatPenalty, p.FrequencyPenalty = 1.5, 0.3
				g.RepeatPenalty, g.FrequencyPenalty = 1.5, 0.3
			}
			s, gs := mustNew(t, p, len(logits)), mustNew(t, g, len(logits))
			for i := range 20 {
				a, b := s.Sample(logits), gs.Sample(logits)
				if a != b {
					t.Fatalf("seed %d pen %v step %d: top-k=1 gave %d, greedy %d", seed, pen, i, a, b)
				}
				s.Accept(a)
				gs.Accept(b)
			}
		}
	}
}

// survivors runs the truncation stages on logits and returns the surviving
// ids in ascending order.
func survivors(t *testing.T, p Params, logits []float32) []int32 {
	t.Helper()
	s := mustNew(t, p, len(logits))
	l := slices.Clone(logits)
	s.applyPenalties(l)
	c := s.truncate(l)
	ids := make([]int32, len(c))
	for i, x := range c {
		ids[i] = x.id
	}
	slices.Sort(ids)
	return ids
}

func TestTruncationSets(t *testing.T) {
	// Probabilities placed at scrambled ids so that id order != rank order.
	// id:    0     1     2     3     4     5
	probs := []float64{0.06, 0.30, 0.04, 0.40, 0.12, 0.08}
	logits := logitsOf(probs...)
	tests := []struct {
		name       string
		topK       int
		topP, minP float32
		want       []int32
	}{
		{"none", 0, 1, 0, []int32{0, 1, 2, 3, 4, 5}},
		{"top-k 1", 1, 1, 0, []int32{3}},
		{"top-k 3", 3, 1, 0, []int32{1, 3, 4}},
		{"top-p 0", 0, 0, 0, []int32{3}},
		{"top-p 0.35", 0, 0.35, 0, []int32{3}},
		{"top-p 0.5", 0, 0.5, 0, []int32{1, 3}},
		{"top-p 0.8", 0, 0.8, 0, []int32{1, 3, 4}},
		{"top-p 0.85", 0, 0.85, 0, []int32{1, 3, 4, 5}},
		{"top-p 0.93", 0, 0.93, 0, []int32{0, 1, 3, 4, 5}},
		{"top-p 0.99", 0, 0.99, 0, []int32{0, 1, 2, 3, 4, 5}},
		{"min-p 0.05", 0, 1, 0.05, []int32{0, 1, 2, 3, 4, 5}},
		{"min-p 0.125", 0, 1, 0.125, []int32{0, 1, 3, 4, 5}}, // cut at 0.05
		{"min-p 0.25", 0, 1, 0.25, []int32{1, 3, 4}},         // cut at 0.10
		{"min-p 0.5", 0, 1, 0.5, []int32{1, 3}},              // cut at 0.20
		{"min-p 1", 0, 1, 1, []int32{3}},
		// Chained stages keep the intersection.
		{"top-p 0.93 min-p 0.25", 0, 0.93, 0.25, []int32{1, 3, 4}},
		{"top-p 0.5 min-p 0.05", 0, 0.5, 0.05, []int32{1, 3}},
		// Top-p after top-k renormalizes over the k survivors:
		// {0.40, 0.30, 0.12}/0.82 → 0.488, 0.366, 0.146.
		{"top-k 3 top-p 0.8", 3, 0.8, 0, []int32{1, 3}},
		{"top-k 3 top-p 0.86", 3, 0.86, 0, []int32{1, 3, 4}},
		{"top-k 4 top-p 0.85 min-p 0.25", 4, 0.85, 0.25, []int32{1, 3, 4}},
		{"top-k 5 top-p 0.9", 5, 0.9, 0, []int32{1, 3, 4, 5}}, // 0.40+0.30+0.12 = 0.82/0.96 = 0.854
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.TopK, p.TopP, p.MinP, p.Temperature = tc.topK, tc.topP, tc.minP, 1
			if got := survivors(t, p, logits); !slices.Equal(got, tc.want) {
				t.Fatalf("survivors = %v, want %v", got, tc.want)
			}
		})
	}
}

// refTruncate is a direct, slow transcription of the chain: full stable sort,
// cut to k, softmax-and-accumulate for top-p, logit threshold for min-p.
func refTruncate(l []float32, p Params) []int32 {
	ids := make([]int32, len(l))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortStableFunc(ids, func(a, b int32) int {
		switch {
		case l[a] > l[b]:
			return -1
		case l[a] < l[b]:
			return 1
		}
		return 0
	})
	if p.TopK > 0 && p.TopK < len(ids) {
		ids = ids[:p.TopK]
	}
	if p.TopP < 1 {
		m := float64(l[ids[0]])
		var z float64
		for _, id := range ids {
			z += math.Exp(float64(l[id]) - m)
		}
		var cum float64
		for i, id := range ids {
			cum += math.Exp(float64(l[id])-m) / z
			if cum >= float64(p.TopP) {
				ids = ids[:i+1]
				break
			}
		}
	}
	if p.MinP > 0 {
		thr := float64(l[ids[0]]) + math.Log(float64(p.MinP))
		n := 1
		for n < len(ids) && float64(l[ids[n]]) >= thr {
			n++
		}
		ids = ids[:n]
	}
	slices.Sort(ids)
	return ids
}

// TestTruncationMatchesReference cross-checks the optimized paths (heap
// top-k, min-p prefilter, top-p probe and its full-sort fallback) against
// refTruncate on random logits, including heavy ties.
func TestTruncationMatchesReference(t *testing.T) {
	type shape struct {
		n           int
		scale, step float64
	}
	shapes := []shape{{50, 1, 0}, {3000, 1, 0}, {3000, 4, 0}, {3000, 2, 0.5}, {3000, 0.2, 0}}
	type cut struct {
		k          int
		topP, minP float32
	}
	cuts := []cut{
		{0, 1, 0}, {40, 1, 0}, {0, 0.95, 0}, {0, 0.5, 0}, {0, 1, 0.05}, {0, 0.95, 0.05},
		{40, 0.95, 0.05}, {7, 0.3, 0.5}, {0, 0.999, 0}, {0, 0.9, 0.001}, {3000, 0.9, 0}, {1, 0.9, 0.9},
	}
	for si, sh := range shapes {
		for ci, c := range cuts {
			logits := randLogits(uint64(100*si+ci), sh.n, sh.scale, sh.step)
			p := DefaultParams()
			p.TopK, p.TopP, p.MinP, p.Temperature = c.k, c.topP, c.minP, 1
			got, want := survivors(t, p, logits), refTruncate(logits, p)
			if !slices.Equal(got, want) {
				t.Errorf("shape %+v cut %+v: %d survivors, reference %d\n got %v\nwant %v",
					sh, c, len(got), len(want), head(got), head(want))
			}
		}
	}
}

func head(x []int32) []int32 { return x[:min(len(x), 20)] }

// TestTopPDeepNucleus builds a nucleus that reaches past every finite band
// depth, so truncateFull must gather the whole vocabulary.
func TestTopPDeepNucleus(t *testing.T) {
	const n = 100000
	logits := make([]float32, n)
	for i := range logits {
		logits[i] = -40 // below the deepest finite band
	}
	logits[777] = -27 // p ≈ e^13/(e^13+99999) ≈ 0.8157
	p := DefaultParams()
	p.TopK, p.TopP, p.MinP, p.Temperature = 0, 0.9, 0, 1
	got, want := survivors(t, p, logits), refTruncate(logits, p)
	if !slices.Equal(got, want) {
		t.Fatalf("%d survivors, reference %d", len(got), len(want))
	}
	// 0.9-0.8157 of the mass from tokens worth 1/542412 each: about 45700.
	if len(got) < 40000 || len(got) > 50000 {
		t.Fatalf("unexpected nucleus size %d", len(got))
	}
}

func TestSortDescMatchesComparator(t *testing.T) {
	ninf, inf := float32(math.Inf(-1)), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	for _, n := range []int{10, 300, 5000} {
		l := randLogits(uint64(n), n, 3, 0.5)
		special := []float32{0, negZero, ninf, inf, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32}
		for i, v := range special {
			l[(i*7919)%n] = v
		}
		p := DefaultParams()
		p.TopK = 0
		s := mustNew(t, p, n)
		c := make([]cand, n)
		for i, v := range l {
			c[i] = cand{int32(i), v}
		}
		want := slices.Clone(c)
		slices.SortFunc(want, byLogitDesc)
		s.sortDesc(c)
		for i := range c {
			// Compare logits as floats: sortDesc may turn -0 into +0.
			if c[i].id != want[i].id || c[i].logit != want[i].logit {
				t.Fatalf("n %d index %d: got %+v, want %+v", n, i, c[i], want[i])
			}
		}
	}
}

func TestPenalties(t *testing.T) {
	logits := []float32{2, -1, 0.5, 3, -2, 0}
	hist := []int32{0, 1, 1, 3, 3, 3, 5, 99, -4} // 99 and -4 are out of range
	tests := []struct {
		name            string
		lastN           int
		rep, freq, pres float32
		want            []float32
	}{
		{"off", 64, 1, 0, 0, []float32{2, -1, 0.5, 3, -2, 0}},
		{"window 0", 0, 2, 0.5, 0.25, []float32{2, -1, 0.5, 3, -2, 0}},
		// Repeat: positive /2, non-positive *2 (0 stays 0).
		{"repeat", 64, 2, 0, 0, []float32{1, -2, 0.5, 1.5, -2, 0}},
		// Frequency: subtract count*0.5 (counts 1, 2, 3 and 1 for id 5).
		{"frequency", 64, 1, 0.5, 0, []float32{1.5, -2, 0.5, 1.5, -2, -0.5}},
		{"presence", 64, 1, 0, 0.25, []float32{1.75, -1.25, 0.5, 2.75, -2, -0.25}},
		// All together, repeat first:
		// id0: 2/2 - (0.5+0.25) = 0.25; id1: -1*2 - (1+0.25) = -3.25
		// id3: 3/2 - (1.5+0.25) = -0.25; id5: 0*2 - 0.75 = -0.75
		{"all", 64, 2, 0.5, 0.25, []float32{0.25, -3.25, 0.5, -0.25, -2, -0.75}},
		{"whole history", -1, 2, 0.5, 0.25, []float32{0.25, -3.25, 0.5, -0.25, -2, -0.75}},
		// Window of the last 5 tokens: 3, 3, 5, 99, -4 → id3 ×2, id5 ×1.
		{"window 5", 5, 2, 0.5, 0.25, []float32{2, -1, 0.5, 0.25, -2, -0.75}},
		// Negative penalties (boosts) are allowed, as in the OpenAI API.
		{"negative freq", 64, 1, -1, 0, []float32{3, 1, 0.5, 6, -2, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.RepeatLastN, p.RepeatPenalty, p.FrequencyPenalty, p.PresencePenalty = tc.lastN, tc.rep, tc.freq, tc.pres
			s := mustNew(t, p, len(logits))
			for _, tok := range hist {
				s.Accept(tok)
			}
			for pass := range 2 { // counts must be cleared between calls
				got := slices.Clone(logits)
				s.applyPenalties(got)
				if !slices.Equal(got, tc.want) {
					t.Fatalf("pass %d: penalized = %v, want %v", pass, got, tc.want)
				}
			}
		})
	}
}

func TestPenaltyWindowSlides(t *testing.T) {
	p := DefaultParams()
	p.RepeatLastN, p.PresencePenalty = 3, 1
	s := mustNew(t, p, 4)
	for _, tok := range []int32{0, 1, 2, 3, 3} { // window: 2, 3, 3
		s.Accept(tok)
	}
	got := make([]float32, 4)
	s.applyPenalties(got)
	if want := []float32{0, 0, -1, -1}; !slices.Equal(got, want) {
		t.Fatalf("penalized = %v, want %v", got, want)
	}
	s.Reset()
	clear(got)
	s.applyPenalties(got)
	if want := []float32{0, 0, 0, 0}; !slices.Equal(got, want) {
		t.Fatalf("after Reset = %v, want %v", got, want)
	}
}

func TestSampleDoesNotModifyLogits(t *testing.T) {
	logits := randLogits(3, 500, 2, 0)
	orig := slices.Clone(logits)
	p := DefaultParams()
	p.RepeatPenalty, p.FrequencyPenalty, p.PresencePenalty = 1.5, 0.5, 0.5
	s := mustNew(t, p, len(logits))
	for range 50 {
		s.Accept(s.Sample(logits))
	}
	p.Temperature = 0
	g := mustNew(t, p, len(logits))
	g.Accept(g.Sample(logits))
	g.Sample(logits)
	if !slices.Equal(logits, orig) {
		t.Fatal("Sample modified the caller's logits")
	}
}

// TestDistribution checks empirical frequencies over 20000 draws against the
// expected softmax of the (truncated, tempered) logits. The seed is fixed, so
// the test is deterministic; the tolerance is about four standard deviations.
func TestDistribution(t *testing.T) {
	const draws = 20000
	logits := []float32{1.0, 2.0, 0.5, -1.0, 1.5, 0.0}
	tests := []struct {
		name string
		temp float32
		topK int
		want func(l []float64) []float64 // expected probabilities from float64 logits
	}{
		{"temp 1", 1, 0, func(l []float64) []float64 { return softmax(l, 1) }},
		{"temp 0.5", 0.5, 0, func(l []float64) []float64 { return softmax(l, 0.5) }},
		{"temp 2", 2, 0, func(l []float64) []float64 { return softmax(l, 2) }},
		{"temp 1 top-k 3", 1, 3, func(l []float64) []float64 {
			ninf := math.Inf(-1) // the top three are ids 1, 4, 0
			return softmax([]float64{l[0], l[1], ninf, ninf, l[4], ninf}, 1)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.Temperature, p.TopK, p.TopP, p.MinP = tc.temp, tc.topK, 1, 0
			s := mustNew(t, p, len(logits))
			counts := make([]int, len(logits))
			for range draws {
				counts[s.Sample(logits)]++
			}
			l64 := make([]float64, len(logits))
			for i, v := range logits {
				l64[i] = float64(v)
			}
			want := tc.want(l64)
			for i, pr := range want {
				f := float64(counts[i]) / draws
				tol := 4*math.Sqrt(pr*(1-pr)/draws) + 1e-9
				if math.Abs(f-pr) > tol {
					t.Errorf("token %d: frequency %.4f, probability %.4f (tolerance %.4f)", i, f, pr, tol)
				}
				if pr > 0.05 && math.Abs(f-pr)/pr > 0.05 {
					t.Errorf("token %d: frequency %.4f is more than 5%% off %.4f", i, f, pr)
				}
				if pr == 0 && counts[i] != 0 {
					t.Errorf("token %d was truncated but drawn %d times", i, counts[i])
				}
			}
		})
	}
}

func softmax(l []float64, temp float64) []float64 {
	m := math.Inf(-1)
	for _, v := range l {
		m = max(m, v)
	}
	out := make([]float64, len(l))
	var z float64
	for i, v := range l {
		out[i] = math.Exp((v - m) / temp)
		z += out[i]
	}
	for i := range out {
		out[i] /= z
	}
	return out
}

func TestInvalidParams(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	tests := []struct {
		name   string
		mod    func(*Params)
		nVocab int
		field  string
	}{
		{"negative temperature", func(p *Params) { p.Temperature = -0.1 }, 10, "Temperature"},
		{"NaN temperature", func(p *Params) { p.Temperature = nan }, 10, "Temperature"},
		{"inf temperature", func(p *Params) { p.Temperature = inf }, 10, "Temperature"},
		{"negative top-k", func(p *Params) { p.TopK = -1 }, 10, "TopK"},
		{"top-p above 1", func(p *Params) { p.TopP = 1.01 }, 10, "TopP"},
		{"negative top-p", func(p *Params) { p.TopP = -0.1 }, 10, "TopP"},
		{"NaN top-p", func(p *Params) { p.TopP = nan }, 10, "TopP"},
		{"min-p above 1", func(p *Params) { p.MinP = 2 }, 10, "MinP"},
		{"negative min-p", func(p *Params) { p.MinP = -0.5 }, 10, "MinP"},
		{"zero repeat penalty", func(p *Params) { p.RepeatPenalty = 0 }, 10, "RepeatPenalty"},
		{"negative repeat penalty", func(p *Params) { p.RepeatPenalty = -1 }, 10, "RepeatPenalty"},
		{"NaN repeat penalty", func(p *Params) { p.RepeatPenalty = nan }, 10, "RepeatPenalty"},
		{"repeat last n -2", func(p *Params) { p.RepeatLastN = -2 }, 10, "RepeatLastN"},
		{"inf frequency", func(p *Params) { p.FrequencyPenalty = -inf }, 10, "FrequencyPenalty"},
		{"NaN presence", func(p *Params) { p.PresencePenalty = nan }, 10, "PresencePenalty"},
		{"zero vocab", func(*Params) {}, 0, "nVocab"},
		{"negative vocab", func(*Params) {}, -5, "nVocab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			tc.mod(&p)
			s, err := New(p, tc.nVocab)
			if err == nil {
				t.Fatalf("New succeeded (%v), want an error naming %s", s != nil, tc.field)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q does not name %s", err, tc.field)
			}
		})
	}
	// Boundary values are accepted.
	ok := []func(*Params){
		func(p *Params) { p.Temperature, p.TopK, p.TopP, p.MinP = 0, 0, 1, 0 },
		func(p *Params) { p.TopP, p.MinP = 0, 1 },
		func(p *Params) { p.RepeatLastN, p.TopK = -1, 1<<20 },
		func(p *Params) { p.FrequencyPenalty, p.PresencePenalty = -2, 2 },
	}
	for i, mod := range ok {
		p := DefaultParams()
		mod(&p)
		if _, err := New(p, 10); err != nil {
			t.Errorf("valid params %d rejected: %v", i, err)
		}
	}
}

func TestSampleWrongLengthPanics(t *testing.T) {
	s := mustNew(t, DefaultParams(), 10)
	defer func() {
		if recover() == nil {
			t.Fatal("Sample with the wrong logit count did not panic")
		}
	}()
	s.Sample(make([]float32, 9))
}

func TestNoAllocations(t *testing.T) {
	logits := randLogits(5, 20000, 2, 0)
	configs := map[string]func(*Params){
		"default":       func(*Params) {},
		"greedy":        func(p *Params) { p.Temperature = 0 },
		"penalties":     func(p *Params) { p.RepeatPenalty, p.FrequencyPenalty = 1.1, 0.1 },
		"no truncation": func(p *Params) { p.TopK, p.TopP, p.MinP = 0, 1, 0 },
		"top-p only":    func(p *Params) { p.TopK, p.MinP = 0, 0 },
		"min-p only":    func(p *Params) { p.TopK, p.TopP = 0, 1 },
	}
	for name, mod := range configs {
		p := DefaultParams()
		mod(&p)
		s := mustNew(t, p, len(logits))
		for i := range 64 {
			s.Accept(int32(i * 7))
		}
		s.Sample(logits)
		if a := testing.AllocsPerRun(20, func() { s.Sample(logits) }); a != 0 {
			t.Errorf("%s: %.1f allocations per Sample", name, a)
		}
	}
}

func TestDefaultParams(t *testing.T) {
	p := DefaultParams()
	want := Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, RepeatLastN: 64, Seed: DefaultSeed}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("DefaultParams = %+v, want %+v", p, want)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkSample(b *testing.B) {
	const nVocab = 151936
	logits := randLogits(42, nVocab, 3, 0)
	configs := []struct {
		name string
		mod  func(*Params)
	}{
		{"greedy", func(p *Params) { p.Temperature = 0 }},
		{"default", func(*Params) {}},
		{"default+penalties", func(p *Params) { p.RepeatPenalty, p.FrequencyPenalty, p.PresencePenalty = 1.1, 0.1, 0.1 }},
		{"top-p+min-p", func(p *Params) { p.TopK = 0 }},
		{"top-p", func(p *Params) { p.TopK, p.MinP = 0, 0 }},
		{"no-truncation", func(p *Params) { p.TopK, p.TopP, p.MinP, p.Temperature = 0, 1, 0, 1 }},
	}
	for _, cfg := range configs {
		b.Run(cfg.name, func(b *testing.B) {
			p := DefaultParams()
			cfg.mod(&p)
			s := mustNew(b, p, nVocab)
			for i := range 64 {
				s.Accept(int32(i * 2371 % nVocab))
			}
			b.ReportAllocs()
			b.SetBytes(nVocab * 4)
			for b.Loop() {
				s.Sample(logits)
			}
		})
	}
}

// TestLogitBias: the bias is added before every other stage (llama.cpp's
// chain starts with its logit-bias sampler), -Inf bans a token, the
// caller's logits are left alone, and bad entries are refused by name.
func TestLogitBias(t *testing.T) {
	logits := []float32{1, 5, 3, 2, 4}
	for _, tc := range []struct {
		name string
		bias []TokenBias
		pen  bool
		want int32
	}{
		{"none", nil, false, 1},
		{"ban the best", []TokenBias{{1, float32(math.Inf(-1))}}, false, 4},
		{"-100 bans", []TokenBias{{1, -100}, {4, -100}}, false, 2},
		{"raise one", []TokenBias{{3, 3.5}}, false, 3},
		{"bias then penalties", []TokenBias{{0, 4.5}}, true, 1}, // 1+4.5 = 5.5, then the repeat penalty 2 halves it
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.Temperature = 0
			p.LogitBias = tc.bias
			if tc.pen {
				p.RepeatPenalty = 2
			}
			s, err := New(p, len(logits))
			if err != nil {
				t.Fatal(err)
			}
			if tc.pen {
				s.Accept(0)
			}
			in := slices.Clone(logits)
			if got := s.Sample(in); got != tc.want {
				t.Errorf("sampled %d, want %d", got, tc.want)
			}
			if !slices.Equal(in, logits) {
				t.Errorf("Sample changed the caller's logits: %v", in)
			}
		})
	}
	p := DefaultParams()
	p.LogitBias = []TokenBias{{7, 1}}
	if _, err := New(p, 5); err == nil || !strings.Contains(err.Error(), "token 7") {
		t.Errorf("out-of-vocabulary bias: %v", err)
	}
	p.LogitBias = []TokenBias{{2, float32(math.NaN())}}
	if _, err := New(p, 5); err == nil || !strings.Contains(err.Error(), "LogitBias") {
		t.Errorf("NaN bias: %v", err)
	}
}
