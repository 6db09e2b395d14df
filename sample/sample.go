// Package sample turns a vector of next-token logits into a token id.
//
// The sampler mirrors llama.cpp's default sampler chain:
//
//	logit bias → penalties → top-k → top-p → min-p → temperature → distribution draw
//
// Truncation (top-k, top-p, min-p) therefore operates on the penalized but
// untempered logits, and temperature only reshapes the distribution of the
// surviving candidates. A temperature of 0 selects the argmax of the
// penalized logits (ties go to the lowest token id), which is what the chain
// degenerates to in llama.cpp as well.
//
// Randomness comes from a private xoshiro256** generator seeded from
// Params.Seed, so a given seed, parameter set, and logit sequence always
// produce the same tokens on every platform.
package sample

import (
	"fmt"
	"math"
	"slices"
)

// DefaultSeed is the seed used by DefaultParams. Unlike llama.cpp, whose
// default seed means "pick one at random", minfer keeps the default fixed so
// that runs are reproducible unless the caller asks otherwise.
const DefaultSeed uint64 = 0x5eed

// Params configures a Sampler. The zero value is not meaningful (TopP 0 keeps
// only one candidate and RepeatPenalty 0 is invalid); start from DefaultParams.
type Params struct {
	Temperature      float32 // 0 → greedy
	TopK             int     // 0 → off
	TopP             float32 // 1 → off
	MinP             float32 // 0 → off
	RepeatPenalty    float32 // 1 → off (llama.cpp semantics: divide positive logits, multiply negative)
	RepeatLastN      int     // window of recent tokens for penalties (64 default; 0 off, -1 = whole history)
	FrequencyPenalty float32 // 0 → off (OpenAI semantics, as llama.cpp's penalties sampler)
	PresencePenalty  float32 // 0 → off
	Seed             uint64
	// LogitBias is added to the named tokens' logits before every other
	// stage (OpenAI's and llama-server's logit_bias); a bias of -Inf bans
	// the token. Nil → off.
	LogitBias []TokenBias `json:",omitempty"`
}

// TokenBias is one entry of Params.LogitBias.
type TokenBias struct {
	Token int32
	Bias  float32
}

// DefaultParams returns llama.cpp's command-line defaults: temperature 0.8,
// top-k 40, top-p 0.95, min-p 0.05, repeat penalty 1.0 (off) over the last 64
// tokens, no frequency or presence penalty, and the fixed DefaultSeed.
func DefaultParams() Params {
	return Params{
		Temperature:      0.8,
		TopK:             40,
		TopP:             0.95,
		MinP:             0.05,
		RepeatPenalty:    1.0,
		RepeatLastN:      64,
		FrequencyPenalty: 0,
		PresencePenalty:  0,
		Seed:             DefaultSeed,
	}
}

// Validate reports the first invalid field of p, naming it in the error.
func (p Params) Validate() error {
	finite := func(v float32) bool {
		return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0)
	}
	switch {
	case !finite(p.Temperature) || p.Temperature < 0:
		return fmt.Errorf("sample: Temperature must be a finite value >= 0, got %v", p.Temperature)
	case p.TopK < 0:
		return fmt.Errorf("sample: TopK must be >= 0 (0 disables it), got %d", p.TopK)
	case !finite(p.TopP) || p.TopP < 0 || p.TopP > 1:
		return fmt.Errorf("sample: TopP must be in [0, 1] (1 disables it), got %v", p.TopP)
	case !finite(p.MinP) || p.MinP < 0 || p.MinP > 1:
		return fmt.Errorf("sample: MinP must be in [0, 1] (0 disables it), got %v", p.MinP)
	case !finite(p.RepeatPenalty) || p.RepeatPenalty <= 0:
		return fmt.Errorf("sample: RepeatPenalty must be a finite value > 0 (1 disables it), got %v", p.RepeatPenalty)
	case p.RepeatLastN < -1:
		return fmt.Errorf("sample: RepeatLastN must be >= -1 (0 disables penalties, -1 uses the whole history), got %d", p.RepeatLastN)
	case !finite(p.FrequencyPenalty):
		return fmt.Errorf("sample: FrequencyPenalty must be finite, got %v", p.FrequencyPenalty)
	case !finite(p.PresencePenalty):
		return fmt.Errorf("sample: PresencePenalty must be finite, got %v", p.PresencePenalty)
	}
	for _, b := range p.LogitBias {
		if math.IsNaN(float64(b.Bias)) || math.IsInf(float64(b.Bias), 1) {
			return fmt.Errorf("sample: LogitBias for token %d must be a number or -Inf, got %v", b.Token, b.Bias)
		}
	}
	return nil
}

// cand is one surviving candidate token with its (penalized) logit.
type cand struct {
	id    int32
	logit float32
}

// byLogitDesc orders candidates by descending logit, then ascending id, so
// that every ordering decision in the package is deterministic.
func byLogitDesc(a, b cand) int {
	switch {
	case a.logit > b.logit:
		return -1
	case a.logit < b.logit:
		return 1
	case a.id < b.id:
		return -1
	case a.id > b.id:
		return 1
	}
	return 0
}

// sortKey maps a candidate to a uint64 whose ascending order is
// byLogitDesc's order: the high word is the logit's bits made monotone and
// then inverted (so larger logits come first), the low word is the id.
// Both zeros map to the key of +0, as they compare equal as floats.
func sortKey(x cand) uint64 {
	v := x.logit
	if v == 0 {
		v = 0 // fold -0 into +0
	}
	b := math.Float32bits(v)
	if b&0x80000000 != 0 {
		b = ^b // negative: larger magnitude sorts lower
	} else {
		b |= 0x80000000
	}
	return uint64(^b)<<32 | uint64(uint32(x.id))
}

// fromSortKey inverts sortKey (up to the sign of zero).
func fromSortKey(k uint64) cand {
	b := ^uint32(k >> 32)
	if b&0x80000000 != 0 {
		b &^= 0x80000000
	} else {
		b = ^b
	}
	return cand{int32(uint32(k)), math.Float32frombits(b)}
}

// sortDesc sorts c into byLogitDesc order. Large inputs go through integer
// keys, which the standard library sorts several times faster than it can
// with a comparison function.
func (s *Sampler) sortDesc(c []cand) {
	if len(c) < 256 || len(c) > len(s.keys) {
		slices.SortFunc(c, byLogitDesc)
		return
	}
	k := s.keys[:len(c)]
	for i, x := range c {
		k[i] = sortKey(x)
	}
	slices.Sort(k)
	for i, v := range k {
		c[i] = fromSortKey(v)
	}
}

// topPBands are the depths (in nats below the best logit) of the bands in
// which truncateFull gathers and sorts the vocabulary for top-p when top-k
// does not bound it. A token 4 nats down carries under 2% of the best one's
// probability, so peaked distributions finish in the first band; flat ones
// pay a few extra linear scans, but never sort anything twice.
var topPBands = [...]float64{4, 8, 16, 32, math.Inf(1)}

// Sampler draws tokens from logits according to Params. It owns reusable
// buffers sized to the vocabulary, so Sample does not allocate. A Sampler is
// not safe for concurrent use.
type Sampler struct {
	p      Params
	nVocab int
	rng    rng

	penalize bool    // whether the penalties stage is active
	hist     []int32 // accepted tokens: a ring of RepeatLastN, or the whole history for -1
	histPos  int     // next write position in hist once the ring is full
	counts   []int32 // per-token occurrence counts, all zero between calls

	logits []float32 // penalized copy of the caller's logits (penalties only)
	cands  []cand    // candidate buffer, capacity nVocab
	probs  []float64 // unnormalized weights for the final draw
	keys   []uint64  // sort keys for sortDesc
}

// New validates p and returns a Sampler for a vocabulary of nVocab tokens.
func New(p Params, nVocab int) (*Sampler, error) {
	if nVocab <= 0 {
		return nil, fmt.Errorf("sample: nVocab must be > 0, got %d", nVocab)
	}
	if nVocab > math.MaxInt32 {
		return nil, fmt.Errorf("sample: nVocab %d does not fit token ids in int32", nVocab)
	}
	for _, b := range p.LogitBias {
		if b.Token < 0 || int(b.Token) >= nVocab {
			return nil, fmt.Errorf("sample: LogitBias names token %d, outside the vocabulary of %d", b.Token, nVocab)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s := &Sampler{
		p:      p,
		nVocab: nVocab,
		cands:  make([]cand, nVocab),
		probs:  make([]float64, nVocab),
	}
	if k := p.TopK; k > 0 && k < nVocab {
		s.keys = make([]uint64, k)
	} else if p.TopP < 1 || p.MinP > 0 {
		s.keys = make([]uint64, nVocab)
	}
	s.penalize = p.RepeatLastN != 0 &&
		(p.RepeatPenalty != 1 || p.FrequencyPenalty != 0 || p.PresencePenalty != 0)
	if s.penalize || len(p.LogitBias) > 0 {
		s.logits = make([]float32, nVocab)
	}
	if s.penalize {
		s.counts = make([]int32, nVocab)
		if p.RepeatLastN > 0 {
			s.hist = make([]int32, 0, p.RepeatLastN)
		}
	}
	s.rng.seed(p.Seed)
	return s, nil
}

// Params returns the parameters the sampler was built with.
func (s *Sampler) Params() Params { return s.p }

// Accept records tok as part of the context (prompt tokens as well as
// generated ones) so that later calls to Sample can penalize repeats. Tokens
// outside [0, nVocab) are recorded but never penalize anything. When
// penalties are disabled Accept does nothing.
func (s *Sampler) Accept(tok int32) {
	if !s.penalize {
		return
	}
	n := s.p.RepeatLastN
	if n < 0 || len(s.hist) < n {
		s.hist = append(s.hist, tok)
		return
	}
	s.hist[s.histPos] = tok
	s.histPos++
	if s.histPos == n {
		s.histPos = 0
	}
}

// Reset forgets the accepted history and reseeds the random generator, so
// the sampler behaves exactly as if it had just been created.
func (s *Sampler) Reset() {
	s.hist = s.hist[:0]
	s.histPos = 0
	s.rng.seed(s.p.Seed)
}

// Sample returns the next token for logits, which must hold exactly nVocab
// values; it panics otherwise. The caller's slice is not modified. Logits
// should be finite or -Inf; NaN or +Inf entries give unspecified (but still
// deterministic) results.
func (s *Sampler) Sample(logits []float32) int32 {
	if len(logits) != s.nVocab {
		panic(fmt.Sprintf("sample: got %d logits, sampler vocabulary is %d", len(logits), s.nVocab))
	}
	l := logits
	if len(s.p.LogitBias) > 0 {
		// Only the bias and penalties stages write; later stages just read l.
		l = s.logits
		copy(l, logits)
		for _, b := range s.p.LogitBias {
			l[b.Token] += b.Bias
		}
	}
	if s.penalize && len(s.hist) > 0 {
		if len(s.p.LogitBias) == 0 {
			l = s.logits
			copy(l, logits)
		}
		s.applyPenalties(l)
	}
	if s.p.Temperature == 0 {
		return argmax(l)
	}
	return s.draw(s.truncate(l))
}

// applyPenalties applies the repeat, frequency, and presence penalties to l
// in place, using the tokens in the current window. For every token that
// occurs c > 0 times in the window, as llama.cpp does:
//
//	logit = logit <= 0 ? logit*RepeatPenalty : logit/RepeatPenalty
//	logit -= c*FrequencyPenalty + PresencePenalty
func (s *Sampler) applyPenalties(l []float32) {
	if !s.penalize || len(s.hist) == 0 {
		return
	}
	counts := s.counts
	n := int32(len(l))
	for _, t := range s.hist {
		if t >= 0 && t < n {
			counts[t]++
		}
	}
	rep, freq, pres := s.p.RepeatPenalty, s.p.FrequencyPenalty, s.p.PresencePenalty
	for _, t := range s.hist {
		if t < 0 || t >= n {
			continue
		}
		c := counts[t]
		if c == 0 {
			continue // already penalized (duplicate in the window)
		}
		counts[t] = 0
		v := l[t]
		if v <= 0 {
			v *= rep
		} else {
			v /= rep
		}
		l[t] = v - (float32(c)*freq + pres)
	}
}

// argmax returns the index of the largest value, the lowest index on ties.
// The common case, a block of eight values none of which beats the running
// maximum, costs eight well-predicted compares and no loop-carried update.
func argmax(l []float32) int32 {
	best := 0
	bv := l[0]
	i := 0
	for ; i+8 <= len(l); i += 8 {
		b := l[i : i+8 : i+8]
		if b[0] > bv || b[1] > bv || b[2] > bv || b[3] > bv ||
			b[4] > bv || b[5] > bv || b[6] > bv || b[7] > bv {
			for j, v := range b {
				if v > bv {
					bv, best = v, i+j
				}
			}
		}
	}
	for ; i < len(l); i++ {
		if l[i] > bv {
			bv, best = l[i], i
		}
	}
	return int32(best)
}

// truncate runs top-k, top-p, and min-p over the penalized logits l and
// returns the surviving candidates (a prefix of s.cands). The result is sorted
// by descending logit whenever any truncation stage ran, and in id order when
// none did.
func (s *Sampler) truncate(l []float32) []cand {
	k := s.p.TopK
	if k > 0 && k < len(l) {
		c := s.topK(l, k)
		c = topP(c, s.p.TopP)
		return minP(c, s.p.MinP)
	}
	return s.truncateFull(l)
}

// topK selects the k best candidates with a bounded min-heap (O(n log k),
// and for typical logits almost every token is rejected by a single
// comparison against the heap root), then sorts them.
func (s *Sampler) topK(l []float32, k int) []cand {
	h := s.cands[:k]
	for i := range k {
		h[i] = cand{int32(i), l[i]}
	}
	// Heapify with the worst candidate (lowest logit, then highest id) at the root.
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	// Later ids lose ties, so only a strictly larger logit displaces the
	// root. Blocks of eight are screened against the root first (see argmax).
	i := k
	for ; i+8 <= len(l); i += 8 {
		b := l[i : i+8 : i+8]
		r := h[0].logit
		if b[0] > r || b[1] > r || b[2] > r || b[3] > r ||
			b[4] > r || b[5] > r || b[6] > r || b[7] > r {
			for j, v := range b {
				if v > h[0].logit {
					h[0] = cand{int32(i + j), v}
					siftDown(h, 0)
				}
			}
		}
	}
	for ; i < len(l); i++ {
		if v := l[i]; v > h[0].logit {
			h[0] = cand{int32(i), v}
			siftDown(h, 0)
		}
	}
	s.sortDesc(h)
	return h
}

// siftDown restores the min-heap property (by byLogitDesc's reverse) below i.
func siftDown(h []cand, i int) {
	n := len(h)
	for {
		w := i
		if c := 2*i + 1; c < n && byLogitDesc(h[c], h[w]) > 0 {
			w = c
		}
		if c := 2*i + 2; c < n && byLogitDesc(h[c], h[w]) > 0 {
			w = c
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// topP keeps the shortest prefix of the sorted candidates c whose softmax
// probability mass reaches p (llama.cpp: stop at the first index where the
// running sum is >= p). p >= 1 disables it.
func topP(c []cand, p float32) []cand {
	if p >= 1 || len(c) == 0 {
		return c
	}
	maxL := float64(c[0].logit)
	if math.IsInf(maxL, -1) {
		return c
	}
	var z float64
	for _, x := range c {
		z += math.Exp(float64(x.logit) - maxL)
	}
	n, _, _ := nucleus(c, 0, 0, maxL, z, p)
	return c[:n]
}

// nucleus walks the sorted candidates c[from:] adding their probabilities
// exp(logit-maxL)/z to cum, the mass of c[:from]. It returns the length of
// the prefix of c at which the mass first reaches p, or ok false (and the
// updated mass) if all of c falls short.
func nucleus(c []cand, from int, cum, maxL, z float64, p float32) (n int, total float64, ok bool) {
	target := float64(p)
	for i := from; i < len(c); i++ {
		cum += math.Exp(float64(c[i].logit)-maxL) / z
		if cum >= target {
			return i + 1, cum, true
		}
	}
	return len(c), cum, false
}

// minP keeps the candidates whose probability is at least p times that of
// the most likely one, i.e. logit >= maxLogit + ln(p). c must be sorted by
// descending logit. p <= 0 disables it.
func minP(c []cand, p float32) []cand {
	if p <= 0 || len(c) == 0 {
		return c
	}
	thr := float64(c[0].logit) + math.Log(float64(p))
	n := 1 // the best candidate always survives
	for n < len(c) && float64(c[n].logit) >= thr {
		n++
	}
	return c[:n]
}

// truncateFull handles the case without top-k: the candidate set is the whole
// vocabulary, and sorting all of it is avoided where possible.
//
// Top-p and min-p each keep a prefix of the sorted order and both keep the
// most likely token, so chaining them keeps the shorter of the two prefixes.
// Min-p's prefix is found by a linear filter. Top-p's is found band by band
// (see topPBands): each band of logits is gathered, sorted, and appended, so
// the candidates so far are always exactly a prefix of the full sorted order,
// and accumulation stops at the first band that completes the nucleus or at
// min-p's threshold, whichever comes first. Probabilities are normalized over
// the whole vocabulary, as top-p requires.
func (s *Sampler) truncateFull(l []float32) []cand {
	usePP := s.p.TopP < 1
	useMP := s.p.MinP > 0
	c := s.cands[:0]
	if !usePP && !useMP {
		for i, v := range l {
			c = append(c, cand{int32(i), v})
		}
		return c
	}
	maxL := float32(math.Inf(-1))
	for _, v := range l {
		if v > maxL {
			maxL = v
		}
	}
	if math.IsInf(float64(maxL), -1) {
		// Every token is impossible; keep them all and let draw pick id 0.
		for i, v := range l {
			c = append(c, cand{int32(i), v})
		}
		return c
	}
	m := float64(maxL)
	mpThr := math.Inf(-1)
	if useMP {
		mpThr = m + math.Log(float64(s.p.MinP))
	}
	if !usePP {
		for i, v := range l {
			if float64(v) >= mpThr {
				c = append(c, cand{int32(i), v})
			}
		}
		s.sortDesc(c)
		return c
	}
	var z float64
	for _, v := range l {
		z += math.Exp(float64(v) - m)
	}
	var cum float64
	hi := math.Inf(1) // exclusive upper bound of the next band
	for _, depth := range topPBands {
		lo := m - depth
		final := math.IsInf(lo, -1)
		if lo <= mpThr {
			lo, final = mpThr, true
		}
		start := len(c)
		for i, v := range l {
			if x := float64(v); x >= lo && x < hi {
				c = append(c, cand{int32(i), v})
			}
		}
		s.sortDesc(c[start:])
		n, total, ok := nucleus(c, start, cum, m, z, s.p.TopP)
		if ok || final {
			// Either the nucleus is complete, or min-p's cut (or the end
			// of the vocabulary) comes first.
			return c[:n]
		}
		cum, hi = total, lo
	}
	return c // unreachable: the last band is final
}

// draw applies the temperature to the candidates' logits, forms their
// softmax (in float64, with the maximum subtracted), and draws one of them
// with the sampler's generator.
func (s *Sampler) draw(c []cand) int32 {
	maxL := float32(math.Inf(-1))
	for _, x := range c {
		if x.logit > maxL {
			maxL = x.logit
		}
	}
	if math.IsInf(float64(maxL), -1) {
		return c[0].id
	}
	m := float64(maxL)
	invT := 1 / float64(s.p.Temperature)
	w := s.probs[:len(c)]
	var sum float64
	for i, x := range c {
		e := math.Exp((float64(x.logit) - m) * invT)
		w[i] = e
		sum += e
	}
	u := s.rng.float64() * sum
	var cum float64
	last := 0
	for i, e := range w {
		if e == 0 {
			continue
		}
		cum += e
		last = i
		if cum > u {
			return c[i].id
		}
	}
	// Rounding left u at or beyond the final partial sum.
	return c[last].id
}
