package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// elapsed shows "label… 12.3 s" on stderr, updated a few times a second,
// while a step that cannot count its own progress runs; it draws nothing
// when stderr is not a terminal. stop ends the display (idempotent).
func elapsed(label string) (stop func()) {
	if !isTerminal(os.Stderr) {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintf(os.Stderr, "\r%s… %.1f s\n", label, time.Since(start).Seconds())
				return
			case <-t.C:
				fmt.Fprintf(os.Stderr, "\r%s… %.1f s", label, time.Since(start).Seconds())
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// progressWriter counts the bytes written through it for a progress bar
// (progressBar's callback) of total bytes, calling first before the first
// write.
type progressWriter struct {
	w     io.Writer
	done  int64
	total int64
	first func()
	prog  func(done, total int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	if p.first != nil {
		p.first()
		p.first = nil
	}
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.prog != nil {
		p.prog(p.done, p.total)
	}
	return n, err
}
