package alloc

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/minfer/minfer/ir"
)

// Validate checks the plan against the graph schedule it names (g.Prefill or
// g.Decode, by p.Schedule); see ValidateSchedule.
func (p *Plan) Validate(g *ir.Graph) error {
	for _, s := range []*ir.Schedule{g.Prefill, g.Decode} {
		if s != nil && s.Name == p.Schedule {
			return p.ValidateSchedule(g, s)
		}
	}
	return fmt.Errorf("alloc: plan is for schedule %q, which the graph does not have", p.Schedule)
}

// ValidateSchedule checks a plan, possibly from an untrusted source, against
// schedule s of graph g, recomputing liveness and sizes from p.Options: every
// activation has a slot of at least its size, in the shared arena when a
// split step produces it and in the private scratch when a Redundant step
// does; slots are aligned and inside their space; no two values live in the
// same group overlap; every State root has an aligned, large enough,
// disjoint KV region; the scratch sizes are the ones the graph needs; and no
// space is larger than one buffer per value would take. It returns all
// problems found, joined.
func (p *Plan) ValidateSchedule(g *ir.Graph, s *ir.Schedule) error {
	if s.Name != p.Schedule {
		return fmt.Errorf("alloc: plan is for schedule %q, not %q", p.Schedule, s.Name)
	}
	a, err := analyze(g, s, p.Options)
	if err != nil {
		return err
	}
	if p.Options.Align == 0 {
		return fmt.Errorf("alloc: plan has no alignment")
	}
	al := int64(p.Options.Align)
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("alloc: "+format, args...)) }
	name := func(id int) string {
		if id >= 0 && id < len(g.Values) {
			return g.Values[id].String()
		}
		return fmt.Sprintf("value %d", id)
	}

	space := func(what string, ivs []interval, slots map[int]Slot, total int64, kv bool) {
		if total < 0 || total%al != 0 {
			bad("%s size %d is negative or not a multiple of %d", what, total, al)
		}
		var limit int64
		want := make(map[int]bool, len(ivs))
		for _, iv := range ivs {
			want[iv.id] = true
			limit += alignUp(iv.size, al)
		}
		if total > limit {
			bad("%s size %d exceeds the %d bytes of one buffer per value", what, total, limit)
		}
		var ok []interval // slots that passed the per-slot checks, for overlap
		offs := make(map[int]Slot, len(ivs))
		for _, iv := range ivs {
			sl, has := slots[iv.id]
			if !has {
				bad("%s has no slot for %s", what, name(iv.id))
				continue
			}
			switch {
			case sl.Size < iv.size:
				bad("%s slot of %s is %d bytes, needs %d", what, name(iv.id), sl.Size, iv.size)
			case sl.Offset < 0 || sl.Offset%al != 0:
				bad("%s slot of %s at offset %d is not %d-aligned", what, name(iv.id), sl.Offset, al)
			case sl.Offset > total-sl.Size:
				bad("%s slot of %s [%d, +%d) is outside the %d bytes", what, name(iv.id), sl.Offset, sl.Size, total)
			default:
				ok = append(ok, iv)
				offs[iv.id] = sl
			}
		}
		for id := range slots {
			if !want[id] {
				bad("%s has a slot for %s, which it does not hold", what, name(id))
			}
		}
		// Sweep by offset: each slot against the later slots that start
		// before it ends; report those live in a common group (KV regions
		// are live throughout).
		slices.SortFunc(ok, func(x, y interval) int {
			return cmp.Or(cmp.Compare(offs[x.id].Offset, offs[y.id].Offset), cmp.Compare(x.id, y.id))
		})
		for i, x := range ok {
			sx := offs[x.id]
			if sx.Size == 0 {
				continue
			}
			for _, y := range ok[i+1:] {
				sy := offs[y.id]
				if sy.Offset >= sx.End() {
					break
				}
				if sy.Size == 0 {
					continue
				}
				if kv || (x.start <= y.end && y.start <= x.end) {
					bad("%s slots of %s [%d, +%d) and %s [%d, +%d) overlap while both are live", what,
						name(x.id), sx.Offset, sx.Size, name(y.id), sy.Offset, sy.Size)
				}
			}
		}
	}
	space("arena", a.shared, p.Slots, p.ArenaBytes, false)
	space("private scratch", a.private, p.Private, p.PrivateBytes, false)
	space("KV", a.kv, p.KV, p.KVBytes, true)

	if p.QuantBytes != a.quantBytes {
		bad("quant scratch is %d bytes, the schedule needs %d", p.QuantBytes, a.quantBytes)
	}
	if p.AttnScratch != a.attnScratch {
		bad("attention scratch is %d floats, the schedule needs %d", p.AttnScratch, a.attnScratch)
	}
	if p.SumBytes != a.sumBytes {
		bad("sum of activation buffers is %d, the schedule's is %d", p.SumBytes, a.sumBytes)
	}
	return errors.Join(errs...)
}
