package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/minfer/minfer/sample"
)

// Errors Submit returns.
var (
	ErrQueueFull = errors.New("all slots are busy and the queue is full")
	ErrClosed    = errors.New("the server is shutting down")
	// errEval marks a failed evaluation: the slot's cache is then unknown.
	errEval = errors.New("evaluation failed")
)

// Vocab is what the scheduler needs of a tokenizer: token pieces and the
// end-of-generation set.
type Vocab interface {
	TokenPiece(id int32) string
	IsEOG(id int32) bool
}

// genRequest is one generation: a tokenized prompt and how to sample.
type genRequest struct {
	Prompt    []int32
	Params    sample.Params
	MaxTokens int // -1: until end of generation or a full slot
	Stop      []string
	IgnoreEOS bool // generate past end-of-generation tokens (benchmarks)
	// NoCache makes the request prefill its whole prompt even if its slot
	// holds a prefix of it.
	NoCache bool
}

// job is a request's life in the scheduler. The scheduler appends text
// under mu and signals notify; the handler takes it from there.
type job struct {
	req       genRequest
	ctx       context.Context
	submitted time.Time
	sampler   *sample.Sampler
	notify    chan struct{} // capacity 1: "something changed"

	mu         sync.Mutex
	out        []byte // text ready for the client, not yet taken
	done       bool
	finish     string // "stop" or "length"
	err        error
	generated  int
	ttft       time.Duration
	tokens     []int32 // generated tokens (without an end-of-generation token)
	firstToken bool
}

// take returns the text produced since the last call and whether the job
// is over.
func (j *job) take() (string, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := string(j.out)
	j.out = j.out[:0]
	return s, j.done
}

// result is the job's outcome once done.
func (j *job) result() (finish string, generated int, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.finish, j.generated, j.err
}

func (j *job) signal() {
	select {
	case j.notify <- struct{}{}:
	default:
	}
}

// wait blocks until the job has news or ctx ends.
func (j *job) wait(ctx context.Context) error {
	select {
	case <-j.notify:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// slotState is the scheduler's view of a busy slot.
type slotState struct {
	j       *job
	seq     uint64 // admission order: the oldest prefilling slot goes first
	fed     int    // prompt tokens evaluated
	pos     int    // next position to evaluate
	next    int32  // sampled token to feed at pos
	text    []byte // all generated text (cut at a stop string)
	sent    int    // bytes of text handed to the job
	maxStop int
}

// SchedConfig sizes the scheduler.
type SchedConfig struct {
	Queue        int // requests waiting for a slot beyond the slots' own (more: 503)
	PrefillChunk int // most prompt tokens per step of one slot's prompt
	// PrefillBatch bounds the prompt tokens of all slots together in one
	// step (0: 512, llama-server's default micro-batch). The oldest prompt
	// still being prefilled always gets its chunk; the next ones join while
	// their whole chunk fits, so several short prompts arriving together
	// are evaluated in one pass that reads the weights once for all of
	// them.
	PrefillBatch int
	// CachePrompt keeps each slot's KV cache after a request and lets the
	// next request placed there skip the prefix it shares with it; a
	// request goes to the free slot holding the longest such prefix.
	CachePrompt bool
}

// scheduler runs the engine: one goroutine that admits queued jobs into
// free slots and, each step, evaluates every decoding slot's next token
// together with the next chunk of each prompt still being prefilled, oldest
// first, up to the prefill batch, in one EvalSeqs call.
type scheduler struct {
	eng     Engine
	vocab   Vocab
	nvocab  int
	chunk   int
	batch   int           // prompt tokens of all slots per step
	limit   int           // slots + queue: jobs admitted at most
	wake    chan struct{} // capacity 1: a job was queued
	quit    chan struct{}
	stopped chan struct{}
	metrics *metrics

	closeOnce sync.Once
	mu        sync.Mutex
	closed    bool
	slots     []*slotState
	waiting   []*job // FIFO of jobs not yet in a slot
	admitted  uint64
	cache     bool
	held      [][]int32 // per slot: the tokens whose positions its KV cache holds
	engineErr error     // the last EvalSeqs error, nil after a success

	// step scratch
	seqs  []Seq
	owner []*slotState
	pre   []int // slots being prefilled, oldest first
}

func newScheduler(eng Engine, vocab Vocab, nvocab int, cfg SchedConfig, m *metrics) *scheduler {
	if cfg.PrefillChunk <= 0 {
		cfg.PrefillChunk = 128
	}
	if cfg.PrefillBatch <= 0 {
		cfg.PrefillBatch = 512
	}
	s := &scheduler{
		eng: eng, vocab: vocab, nvocab: nvocab, chunk: cfg.PrefillChunk, batch: max(cfg.PrefillBatch, cfg.PrefillChunk),
		limit: max(cfg.Queue, 0) + eng.Slots(), wake: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{}),
		metrics: m, slots: make([]*slotState, eng.Slots()), cache: cfg.CachePrompt, held: make([][]int32, eng.Slots()),
	}
	m.slotsTotal.Store(int64(eng.Slots()))
	go s.run()
	return s
}

// submit queues a generation. A request that finds every slot busy and
// the queue full is refused with ErrQueueFull.
func (s *scheduler) submit(ctx context.Context, r genRequest) (*job, error) {
	if err := r.Params.Validate(); err != nil {
		return nil, err
	}
	j := &job{req: r, ctx: ctx, submitted: time.Now(), notify: make(chan struct{}, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.purgeLocked()
	busy := 0
	for _, st := range s.slots {
		if st != nil {
			busy++
		}
	}
	if busy+len(s.waiting) >= s.limit {
		return nil, ErrQueueFull
	}
	s.waiting = append(s.waiting, j)
	s.metrics.queued.Store(int64(len(s.waiting)))
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return j, nil
}

// purgeLocked drops the waiting jobs whose client went away, so they hold
// no place in the queue (s.mu held).
func (s *scheduler) purgeLocked() {
	kept := s.waiting[:0]
	for _, j := range s.waiting {
		if j.ctx.Err() != nil {
			s.end(j, "", context.Cause(j.ctx))
			continue
		}
		kept = append(kept, j)
	}
	clear(s.waiting[len(kept):])
	s.waiting = kept
	s.metrics.queued.Store(int64(len(s.waiting)))
}

// close stops the scheduler: queued and running jobs end with ErrClosed.
func (s *scheduler) close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.quit)
	})
	<-s.stopped
}

// busy is the number of occupied slots.
func (s *scheduler) busy() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.slots {
		if st != nil {
			n++
		}
	}
	return n
}

// health is the last engine error (nil when the last evaluation worked).
func (s *scheduler) health() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engineErr
}

func (s *scheduler) run() {
	defer close(s.stopped)
	defer s.failAll(ErrClosed)
	for {
		select {
		case <-s.quit:
			return
		default:
		}
		s.reap()
		active := s.admit()
		if active == 0 {
			select {
			case <-s.wake:
			case <-s.quit:
				return
			}
			continue
		}
		s.step()
	}
}

// reap frees the slots of jobs whose client went away.
func (s *scheduler) reap() {
	for i, st := range s.slots {
		if st != nil && st.j.ctx.Err() != nil {
			s.finish(i, "", context.Cause(st.j.ctx))
		}
	}
}

// admit moves waiting jobs into free slots, oldest first, and returns
// the busy count.
func (s *scheduler) admit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purgeLocked()
	for len(s.waiting) > 0 {
		// The free slot whose cache shares the longest prefix with the
		// prompt (the first free one without prompt caching).
		j, best, bestLen := s.waiting[0], -1, -1
		for i, st := range s.slots {
			if st != nil {
				continue
			}
			n := 0
			if s.cache && !j.req.NoCache {
				n = commonPrefix(s.held[i], j.req.Prompt)
			}
			if n > bestLen {
				best, bestLen = i, n
			}
		}
		if best < 0 {
			break
		}
		s.waiting[0] = nil
		s.waiting = s.waiting[1:]
		s.placeLocked(best, j, bestLen)
	}
	n := 0
	for _, st := range s.slots {
		if st != nil {
			n++
		}
	}
	s.metrics.queued.Store(int64(len(s.waiting)))
	return n
}

// commonPrefix is the number of leading tokens a and b share.
func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// placeLocked puts a job into free slot i, whose cache holds shared
// tokens of its prompt (s.mu held). At least the last prompt token is
// evaluated, for the logits.
func (s *scheduler) placeLocked(i int, j *job, shared int) {
	keep := max(0, min(shared, len(j.req.Prompt)-1))
	// The sampler's buffers (a few MiB for a large vocabulary) exist only
	// while the job has a slot.
	sp, err := sample.New(j.req.Params, s.nvocab)
	if err == nil {
		err = s.eng.TruncateSlot(i, keep)
	}
	if err != nil {
		s.held[i] = nil
		s.end(j, "", err)
		return
	}
	s.held[i] = s.held[i][:keep]
	s.metrics.cachedTokens.Add(int64(keep))
	for _, t := range j.req.Prompt {
		sp.Accept(t)
	}
	j.sampler = sp
	s.admitted++
	ns := &slotState{j: j, seq: s.admitted, fed: keep, pos: keep}
	for _, t := range j.req.Stop {
		ns.maxStop = max(ns.maxStop, len(t))
	}
	s.slots[i] = ns
	s.metrics.slotsBusy.Add(1)
}

// step evaluates one batch and samples every sequence that produced
// logits.
func (s *scheduler) step() {
	s.seqs, s.owner, s.pre = s.seqs[:0], s.owner[:0], s.pre[:0]
	for i, st := range s.slots {
		if st == nil {
			continue
		}
		if st.fed < len(st.j.req.Prompt) {
			s.pre = append(s.pre, i)
			continue
		}
		s.seqs = append(s.seqs, Seq{Slot: i, Tokens: []int32{st.next}, Positions: []int32{int32(st.pos)}, Logits: true})
		s.owner = append(s.owner, st)
	}
	slices.SortFunc(s.pre, func(a, b int) int { return cmp.Compare(s.slots[a].seq, s.slots[b].seq) })
	budget := s.batch
	for k, i := range s.pre {
		// Chunks start at multiples of the chunk size, whatever else runs:
		// a prompt is evaluated the same way alone or among others. A
		// chunk that does not fit in what is left of the batch waits for
		// the next step whole (the oldest prompt's always goes).
		pre := s.slots[i]
		p := pre.j.req.Prompt
		end := min(len(p), pre.fed+s.chunk)
		if k > 0 && end-pre.fed > budget {
			continue
		}
		budget -= end - pre.fed
		pos := make([]int32, end-pre.fed)
		for j := range pos {
			pos[j] = int32(pre.fed + j)
		}
		s.seqs = append(s.seqs, Seq{Slot: i, Tokens: p[pre.fed:end], Positions: pos, Logits: end == len(p)})
		s.owner = append(s.owner, pre)
	}
	t0 := time.Now()
	logits, err := s.eval()
	s.mu.Lock()
	s.engineErr = err
	s.mu.Unlock()
	if err != nil {
		s.metrics.engineErrors.Add(1)
		for _, st := range s.owner {
			s.finish(s.slotOf(st), "", fmt.Errorf("%w: %w", errEval, err))
		}
		return
	}
	if len(logits) != len(s.seqs) {
		err := fmt.Errorf("%w: the engine returned %d logit rows for %d sequences", errEval, len(logits), len(s.seqs))
		for _, st := range s.owner {
			s.finish(s.slotOf(st), "", err)
		}
		return
	}
	s.metrics.stepDone(time.Since(t0), len(s.seqs))
	for k, sq := range s.seqs {
		st := s.owner[k]
		if st.fed < len(st.j.req.Prompt) {
			st.fed += len(sq.Tokens)
			st.pos = st.fed
			if !sq.Logits {
				continue
			}
		} else {
			st.pos++
		}
		s.sample(sq.Slot, st, logits[k])
	}
}

// eval calls the engine, turning a panic into an error: the scheduler
// outlives a failed step.
func (s *scheduler) eval() (lg [][]float32, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("engine panic: %v", p)
		}
	}()
	return s.eng.EvalSeqs(s.seqs)
}

func (s *scheduler) slotOf(st *slotState) int {
	for i, x := range s.slots {
		if x == st {
			return i
		}
	}
	return -1
}

// sample draws the slot's next token and emits its text.
func (s *scheduler) sample(slot int, st *slotState, logits []float32) {
	j := st.j
	if len(logits) != s.nvocab {
		s.finish(slot, "", fmt.Errorf("%w: the engine returned %d logits, the vocabulary has %d", errEval, len(logits), s.nvocab))
		return
	}
	t := j.sampler.Sample(logits)
	if !j.firstToken {
		j.firstToken = true
		j.mu.Lock()
		j.ttft = time.Since(j.submitted)
		j.mu.Unlock()
		s.metrics.observeTTFT(time.Since(j.submitted))
	}
	if s.vocab.IsEOG(t) && !j.req.IgnoreEOS {
		s.finish(slot, "stop", nil)
		return
	}
	j.sampler.Accept(t)
	s.metrics.addGenerated(1)
	j.mu.Lock()
	j.generated++
	j.tokens = append(j.tokens, t)
	n := j.generated
	j.mu.Unlock()
	from := len(st.text)
	st.text = append(st.text, s.vocab.TokenPiece(t)...)
	if st.maxStop > 0 {
		// A stop string may straddle the pieces: search from where one
		// could begin.
		lo := max(0, from-st.maxStop+1)
		cut := -1
		for _, stop := range j.req.Stop {
			if stop == "" {
				continue
			}
			if i := strings.Index(string(st.text[lo:]), stop); i >= 0 && (cut < 0 || lo+i < cut) {
				cut = lo + i
			}
		}
		if cut >= 0 {
			st.text = st.text[:cut]
			s.finish(slot, "stop", nil)
			return
		}
	}
	switch {
	case j.req.MaxTokens >= 0 && n >= j.req.MaxTokens:
		s.finish(slot, "length", nil)
		return
	case st.pos >= s.eng.SlotContext():
		// No position left to evaluate the token at.
		s.finish(slot, "length", nil)
		return
	}
	st.next = t
	s.emit(st, st.safeEnd(j.req.Stop))
}

// safeEnd is how much of the text can be sent: not a tail that may begin a
// stop string, nor an incomplete UTF-8 character.
func (st *slotState) safeEnd(stops []string) int {
	end := len(st.text)
	for _, stop := range stops {
		for k := min(len(stop)-1, len(st.text)-st.sent); k > 0; k-- {
			if strings.HasSuffix(string(st.text), stop[:k]) {
				end = min(end, len(st.text)-k)
				break
			}
		}
	}
	// Hold back an unfinished multi-byte character.
	for k := 1; k <= 3 && k <= end-st.sent; k++ {
		b := st.text[end-k]
		if b < 0x80 {
			break
		}
		if utf8.RuneStart(b) {
			if !utf8.FullRune(st.text[end-k : end]) {
				end -= k
			}
			break
		}
	}
	return max(end, st.sent)
}

// emit hands the text up to end to the job.
func (s *scheduler) emit(st *slotState, end int) {
	if end <= st.sent {
		return
	}
	j := st.j
	j.mu.Lock()
	j.out = append(j.out, st.text[st.sent:end]...)
	j.mu.Unlock()
	st.sent = end
	j.signal()
}

// finish ends the job of a slot and frees the slot.
func (s *scheduler) finish(slot int, reason string, err error) {
	st := s.slots[slot]
	if err == nil {
		s.emit(st, len(st.text))
	}
	s.mu.Lock()
	s.slots[slot] = nil
	s.mu.Unlock()
	s.metrics.slotsBusy.Add(-1)
	switch {
	case s.cache && !errors.Is(err, errEval):
		// The cache holds the prompt and the generated tokens fed so far:
		// the next request placed here may reuse them.
		p := st.j.req.Prompt
		held := append(s.held[slot][:0], p[:min(st.fed, len(p))]...)
		if st.pos > len(p) {
			st.j.mu.Lock()
			held = append(held, st.j.tokens[:st.pos-len(p)]...)
			st.j.mu.Unlock()
		}
		s.held[slot] = held
	default:
		s.held[slot] = nil
		if terr := s.eng.TruncateSlot(slot, 0); terr != nil && err == nil {
			err = terr
		}
	}
	st.j.sampler = nil
	s.end(st.j, reason, err)
}

// end marks a job done.
func (s *scheduler) end(j *job, reason string, err error) {
	j.mu.Lock()
	j.done, j.finish, j.err = true, reason, err
	j.mu.Unlock()
	j.signal()
}

// failAll ends every running and waiting job with err.
func (s *scheduler) failAll(err error) {
	for i, st := range s.slots {
		if st != nil {
			s.finish(i, "", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.waiting {
		s.end(j, "", err)
	}
	s.waiting = nil
	s.metrics.queued.Store(0)
}
