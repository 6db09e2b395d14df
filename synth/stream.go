package synth

import (
	"fmt"
	"io"
	"sync"
)

// stream generates the tensors of a model chunk by chunk (runs of whole
// rows of about chunkElems weights) on a set of worker goroutines, and hands
// the encoded chunks to the file writer in file order. At most `inflight`
// chunks exist at a time, so the memory used is a few chunks per worker
// whatever the model size, and the workers keep generating the next chunks
// while the writer writes the current one.
type stream struct {
	m      *model
	specs  []spec
	seed   uint64
	chunks [][]chunk // per tensor, its row ranges in order
	order  chan *job // jobs in file order, as the dispatcher made them
	jobs   chan *job // jobs for the workers
	quit   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	pool   sync.Pool // []byte chunk buffers
}

type chunk struct{ lo, hi int }

var errStreamClosed = fmt.Errorf("synth: stream closed")

type job struct {
	tensor int
	chunk
	buf  []byte
	err  error
	done chan struct{}
}

// newStream starts the dispatcher and `workers` generating goroutines.
// The caller must call close when done (also after an error).
func newStream(m *model, specs []spec, seed uint64, workers int) *stream {
	st := &stream{m: m, specs: specs, seed: seed, quit: make(chan struct{})}
	st.chunks = make([][]chunk, len(specs))
	for i, s := range specs {
		ne0 := int(s.dims[0])
		rows := int(s.elements() / int64(ne0))
		per := max(1, int(chunkElems/int64(ne0)))
		for lo := 0; lo < rows; lo += per {
			st.chunks[i] = append(st.chunks[i], chunk{lo, min(rows, lo+per)})
		}
	}
	inflight := 2*workers + 2
	st.order = make(chan *job, inflight)
	st.jobs = make(chan *job, inflight)
	st.wg.Add(1)
	go st.dispatch()
	for range workers {
		st.wg.Add(1)
		go st.work()
	}
	return st
}

// dispatch makes the jobs in file order. A job enters `order` before
// `jobs`, so the writer always waits on the oldest unfinished chunk and the
// capacity of `order` bounds the chunks in flight.
func (st *stream) dispatch() {
	defer st.wg.Done()
	defer close(st.jobs)
	for i, cs := range st.chunks {
		for _, c := range cs {
			j := &job{tensor: i, chunk: c, done: make(chan struct{})}
			select {
			case st.order <- j:
			case <-st.quit:
				return
			}
			select {
			case st.jobs <- j:
			case <-st.quit:
				return
			}
		}
	}
}

// work generates jobs until there are none left (or the stream is closed).
func (st *stream) work() {
	defer st.wg.Done()
	var f []float32
	for j := range st.jobs {
		select {
		case <-st.quit:
			j.err = errStreamClosed
			close(j.done)
			continue
		default:
		}
		s := st.specs[j.tensor]
		t := st.m.plan[j.tensor].Type
		ne0 := int(s.dims[0])
		rs, err := t.RowSize(ne0)
		if err == nil {
			n := (j.hi - j.lo) * rs
			b, _ := st.pool.Get().([]byte)
			if cap(b) < n {
				b = make([]byte, n)
			}
			j.buf = b[:n]
			if len(f) < ne0 {
				f = make([]float32, ne0)
			}
			err = genRows(st.m.p, s, t, st.seed, j.lo, j.hi, f, j.buf)
		}
		j.err = err
		close(j.done)
	}
}

// writeTensor writes the data of tensor i to w, chunk by chunk as the
// workers finish them. Tensors must be written in file order.
func (st *stream) writeTensor(i int, w io.Writer) error {
	for range st.chunks[i] {
		j := <-st.order
		if j.tensor != i {
			return fmt.Errorf("synth: internal error: tensor %d written out of order (next chunk is of %d)", i, j.tensor)
		}
		<-j.done
		if j.err != nil {
			return j.err
		}
		_, err := w.Write(j.buf)
		st.pool.Put(j.buf[:0])
		if err != nil {
			return err
		}
	}
	return nil
}

// close stops the dispatcher and waits for the workers (their current job
// finishes; nothing new starts).
func (st *stream) close() {
	st.once.Do(func() {
		close(st.quit)
		st.wg.Wait()
	})
}
