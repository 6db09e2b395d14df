package plan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/passes"
	"github.com/minfer/minfer/quant"
	"github.com/minfer/minfer/sample"
	"github.com/minfer/minfer/synth"
	"github.com/minfer/minfer/tokenizer"
)

// compile builds the plan of a GGUF file the way minferc compile does.
func compile(t testing.TB, f *gguf.File, mode Weights) *Plan {
	t.Helper()
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.Run(g, passes.Options{KVType: quant.F16}); err != nil {
		t.Fatal(err)
	}
	const nctx, batch = 256, 64
	mem := map[string]*alloc.Plan{}
	for _, s := range []struct {
		s       *ir.Schedule
		tok, rs int
	}{{g.Prefill, batch, batch}, {g.Decode, 1, 1}} {
		mp, err := alloc.PlanSchedule(g, s.s, alloc.Options{MaxTokens: s.tok, MaxOut: s.rs, NCtx: nctx, KVType: quant.F16})
		if err != nil {
			t.Fatal(err)
		}
		mem[s.s.Name] = mp
	}
	v, err := gguf.LoadVocab(f)
	if err != nil {
		v = &tokenizer.Vocab{Model: "gpt2", Tokens: []string{"a", "b", "ab"}, Merges: []string{"a b"}, BOS: -1, EOS: 2, UNK: -1, PAD: -1, EOT: -1}
	}
	p := &Plan{
		Graph:    g,
		Memory:   mem,
		Vocab:    v,
		Sampling: sample.DefaultParams(),
		Options:  Options{NCtx: nctx, MaxBatch: batch, KVType: "f16", DisabledPasses: []string{}, Tool: "plan_test"},
		CPU:      Machine(),
		Source:   SourceRef{Path: f.Path},
		Mode:     mode,
		// A template, so the round-trip and corruption tests cover the
		// chat_template section too.
		ChatTemplate: "{% for m in messages %}{{ m.content }}{% endfor %}",
	}
	return p
}

func openFixture(t testing.TB, name string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(fixtures.Path(t, "models", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// copyFile copies src into dir and returns the new path.
func copyFile(t testing.TB, src, dir string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// graphsEqual compares two graphs structurally: values (with StateOf and
// producer by ID), nodes, epilogues, kernels, groups and schedules.
func graphsEqual(t *testing.T, a, b *ir.Graph) {
	t.Helper()
	if a.Arch != b.Arch || a.Params != b.Params {
		t.Fatalf("arch/params differ: %s %+v vs %s %+v", a.Arch, a.Params, b.Arch, b.Params)
	}
	if len(a.Values) != len(b.Values) || len(a.Nodes) != len(b.Nodes) {
		t.Fatalf("%d values %d nodes vs %d values %d nodes", len(a.Values), len(a.Nodes), len(b.Values), len(b.Nodes))
	}
	id := func(v *ir.Value) int {
		if v == nil {
			return -1
		}
		return v.ID
	}
	nid := func(n *ir.Node) int {
		if n == nil {
			return -1
		}
		return n.ID
	}
	for i, va := range a.Values {
		vb := b.Values[i]
		if va.ID != vb.ID || va.Name != vb.Name || va.Kind != vb.Kind || va.DType != vb.DType || !va.Shape.Equal(vb.Shape) ||
			va.Source != vb.Source || id(va.StateOf) != id(vb.StateOf) || nid(va.Producer) != nid(vb.Producer) {
			t.Fatalf("value %d: %v vs %v", i, va, vb)
		}
	}
	ids := func(vs []*ir.Value) []int {
		var out []int
		for _, v := range vs {
			out = append(out, id(v))
		}
		return out
	}
	for i, na := range a.Nodes {
		nb := b.Nodes[i]
		if na.ID != nb.ID || na.Op != nb.Op || na.Name != nb.Name || na.Attrs != nb.Attrs || na.Kernel != nb.Kernel ||
			na.Layer != nb.Layer || na.Group != nb.Group || !reflect.DeepEqual(ids(na.Inputs), ids(nb.Inputs)) ||
			!reflect.DeepEqual(ids(na.Outputs), ids(nb.Outputs)) || len(na.Epilogues) != len(nb.Epilogues) {
			t.Fatalf("node %d: %v vs %v", i, na, nb)
		}
		for j, ea := range na.Epilogues {
			eb := nb.Epilogues[j]
			if ea.Op != eb.Op || id(ea.Arg) != id(eb.Arg) || id(ea.Freqs) != id(eb.Freqs) || ea.Attrs != eb.Attrs {
				t.Fatalf("node %d epilogue %d: %+v vs %+v", i, j, ea, eb)
			}
		}
	}
	if id(a.Tokens) != id(b.Tokens) || id(a.Positions) != id(b.Positions) || id(a.OutIDs) != id(b.OutIDs) || id(a.Logits) != id(b.Logits) {
		t.Fatal("graph inputs or logits differ")
	}
	if !reflect.DeepEqual(a.Prefill, b.Prefill) || !reflect.DeepEqual(a.Decode, b.Decode) {
		t.Fatal("schedules differ")
	}
}

func TestRoundTrip(t *testing.T) {
	for _, mode := range []Weights{Embed, Ref} {
		t.Run(mode.String(), func(t *testing.T) {
			f := openFixture(t, "qwen2-synth-q4_k_m.gguf")
			p := compile(t, f, mode)
			path := filepath.Join(t.TempDir(), "plan.bin")
			var calls int
			var last, total int64
			if err := Write(path, p, f, func(done, tot int64) { calls++; last, total = done, tot }); err != nil {
				t.Fatal(err)
			}
			if mode == Embed && (calls == 0 || last != total) {
				t.Errorf("progress: %d calls, last %d of %d", calls, last, total)
			}
			l, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if l.Mode != mode {
				t.Fatalf("mode %s, want %s", l.Mode, mode)
			}
			graphsEqual(t, p.Graph, l.Graph)
			if !reflect.DeepEqual(p.Memory, l.Memory) {
				t.Error("memory plans differ")
			}
			for _, name := range []string{"prefill", "decode"} {
				s := l.Graph.Prefill
				if name == "decode" {
					s = l.Graph.Decode
				}
				if err := l.Memory[name].ValidateSchedule(l.Graph, s); err != nil {
					t.Error(err)
				}
			}
			if !reflect.DeepEqual(p.Vocab, l.Vocab) {
				t.Error("vocab differs")
			}
			if !reflect.DeepEqual(p.Sampling, l.Sampling) {
				t.Errorf("sampling %+v vs %+v", p.Sampling, l.Sampling)
			}
			if !reflect.DeepEqual(p.Options, l.Options) || !p.Options.Compiled.Equal(l.Options.Compiled) {
				t.Errorf("options %+v vs %+v", p.Options, l.Options)
			}
			if !reflect.DeepEqual(p.CPU, l.CPU) || p.Source != l.Source {
				t.Errorf("cpu/source %+v %+v vs %+v %+v", p.CPU, p.Source, l.CPU, l.Source)
			}
			if mode == Ref && (l.Source.Size == 0 || len(l.Source.SHA256) != 64) {
				t.Errorf("ref source not hashed: %+v", l.Source)
			}
			n := 0
			for _, w := range l.Graph.Weights() {
				got, err := l.WeightBytes(w.Source)
				if err != nil {
					t.Fatal(err)
				}
				ti, _ := f.Tensor(w.Source)
				if !bytes.Equal(got, f.TensorData(ti)) {
					t.Fatalf("weight %s differs from the GGUF", w.Source)
				}
				if mode == Embed && uintptr(len(got)) > 0 && (l.Index[w.Source].Offset%64 != 0) {
					t.Errorf("weight %s not aligned", w.Source)
				}
				n++
			}
			if n == 0 {
				t.Fatal("no weights")
			}
			if _, err := l.WeightBytes("no.such.tensor"); err == nil {
				t.Error("unknown tensor: no error")
			}
			t.Logf("%s: %d weights; stats %+v", mode, n, l.Stats)
		})
	}
}

// image writes a plan of the fixture and returns its bytes.
func image(t testing.TB, mode Weights) []byte {
	t.Helper()
	f := openFixture(t, "qwen2-synth-q4_k_m.gguf")
	p := compile(t, f, mode)
	path := filepath.Join(t.TempDir(), "plan.bin")
	if err := Write(path, p, f, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantErr(t *testing.T, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not contain %q", err, s)
		}
	}
}

func TestCorruptSections(t *testing.T) {
	img := image(t, Embed)
	_, entries, err := readHeader(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		for _, at := range []uint64{0, e.Size / 2, e.Size - 1} {
			b := bytes.Clone(img)
			b[e.Offset+at] ^= 0x40
			_, err := Parse(b, OpenOptions{})
			wantErr(t, err, "section "+e.Name+" checksum mismatch (corrupt file)")
		}
	}
	// Without the weights checksum a flipped weight byte goes unnoticed,
	// but the other sections are still checked.
	var w entry
	for _, e := range entries {
		if e.Name == secWeights {
			w = e
		}
	}
	b := bytes.Clone(img)
	b[w.Offset+w.Size/2] ^= 1
	if _, err := Parse(b, OpenOptions{SkipWeightChecksum: true}); err != nil {
		t.Fatal(err)
	}
	// Header and table corruption.
	for _, at := range []int{16, 24, 33, 40 /* reserved */, headerSize + 3, headerSize + 30} {
		b := bytes.Clone(img)
		b[at] ^= 0x10
		_, err := Parse(b, OpenOptions{})
		if err == nil {
			if at == 40 {
				continue // reserved bytes are not covered (documented)
			}
			t.Fatalf("flip at %d: no error", at)
		}
		if !strings.Contains(err.Error(), "checksum mismatch") {
			t.Errorf("flip at %d: %v", at, err)
		}
	}
}

func TestTruncated(t *testing.T) {
	img := image(t, Embed)
	_, entries, err := readHeader(img)
	if err != nil {
		t.Fatal(err)
	}
	cuts := []int{0, 1, 7, 8, 11, 12, 63, 64, 65, 100, len(img) - 1, len(img) - 4096}
	for _, e := range entries {
		cuts = append(cuts, int(e.Offset), int(e.Offset+e.Size/2), int(e.Offset+e.Size)-1)
	}
	for i := 0; i < len(img); i += len(img) / 97 {
		cuts = append(cuts, i)
	}
	for _, n := range cuts {
		if n < 0 || n >= len(img) {
			continue
		}
		_, err := Parse(img[:n], OpenOptions{})
		if err == nil {
			t.Fatalf("truncated to %d of %d: no error", n, len(img))
		}
		if n >= 12 && !strings.Contains(err.Error(), "truncated") {
			t.Errorf("truncated to %d: %v", n, err)
		}
	}
	// The message names the section that runs past the end.
	w := entries[len(entries)-1]
	_, err = Parse(img[:w.Offset+10], OpenOptions{})
	wantErr(t, err, "plan.bin: truncated: section weights at offset", "beyond file size")
	// Trailing garbage is refused too.
	_, err = Parse(append(bytes.Clone(img), 0), OpenOptions{})
	wantErr(t, err, "after the")
}

func TestMagicAndVersion(t *testing.T) {
	img := image(t, Ref)
	b := bytes.Clone(img)
	copy(b, "GGUF")
	_, err := Parse(b, OpenOptions{})
	wantErr(t, err, "not a minfer plan")
	b = bytes.Clone(img)
	binary.LittleEndian.PutUint32(b[8:], 7)
	_, err = Parse(b, OpenOptions{})
	wantErr(t, err, "plan.bin: format version 7, this minfer reads version 1 — recompile with minferc compile")
	// The version is checked before the header checksum and the length,
	// so any future layout gets the version message.
	_, err = Parse(b[:12], OpenOptions{})
	wantErr(t, err, "format version 7")
	_, err = Parse(nil, OpenOptions{})
	wantErr(t, err, "truncated")
}

func TestRefSourceChanged(t *testing.T) {
	dir := t.TempDir()
	src := copyFile(t, fixtures.Path(t, "models", "qwen2-synth-q4_k_m.gguf"), dir)
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	p := compile(t, f, Ref)
	path := filepath.Join(dir, "plan.bin")
	err = Write(path, p, f, nil)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	orig, _ := os.ReadFile(src)

	// One byte altered (same size): the hash catches it.
	b := bytes.Clone(orig)
	b[len(b)-100] ^= 1
	os.WriteFile(src, b, 0o644)
	_, err = Open(path)
	wantErr(t, err, "source GGUF "+src+" changed since compile (sha256")
	// ... unless hashing is switched off.
	l, err = OpenWith(path, OpenOptions{SkipSourceHash: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()

	// Bytes appended: the size catches it.
	os.WriteFile(src, append(bytes.Clone(orig), 1, 2, 3), 0o644)
	_, err = OpenWith(path, OpenOptions{SkipSourceHash: true})
	wantErr(t, err, "changed since compile (size")

	// Gone.
	os.Remove(src)
	_, err = Open(path)
	wantErr(t, err, "cannot be opened", "--weights embed")
}

func TestCPURequirement(t *testing.T) {
	f := openFixture(t, "qwen2-synth-q4_k_m.gguf")
	dir := t.TempDir()
	for _, c := range []struct {
		cpu  CPUInfo
		want string
	}{
		{Machine("fakefeature"), "plan.bin: compiled for a CPU with fakefeature"},
		{CPUInfo{Arch: "sparc64", Required: []string{"vis3"}}, "compiled for sparc64 with kernels that need vis3"},
		{CPUInfo{Arch: "sparc64"}, ""}, // no feature needed: runs on any architecture
	} {
		p := compile(t, f, Embed)
		p.CPU = c.cpu
		path := filepath.Join(dir, "plan.bin")
		if err := Write(path, p, f, nil); err != nil {
			t.Fatal(err)
		}
		l, err := Open(path)
		if c.want == "" {
			if err != nil {
				t.Fatalf("%+v: %v", c.cpu, err)
			}
			l.Close()
			continue
		}
		wantErr(t, err, c.want)
	}
	// A feature x/sys/cpu knows and this CPU lacks is named.
	known, have := features()
	for _, k := range known {
		if !contains(have, k) {
			wantErr(t, CheckCPU(Machine(k)), "compiled for a CPU with "+k+"; this CPU lacks it")
			break
		}
	}
	if err := CheckCPU(Machine(have...)); err != nil {
		t.Fatal(err)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestWriteRefuses checks that Write validates what it writes.
func TestWriteRefuses(t *testing.T) {
	f := openFixture(t, "qwen2-synth-q4_k_m.gguf")
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.bin")
	p := compile(t, f, Embed)
	delete(p.Memory, "decode")
	wantErr(t, Write(path, p, f, nil), "no memory plan for the decode schedule")
	p = compile(t, f, Embed)
	p.Sampling.TopP = 2
	wantErr(t, Write(path, p, f, nil), "section sampling")
	p = compile(t, f, Embed)
	wantErr(t, Write(path, p, shortSource{f}, nil), "source has 3 bytes")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a refused write left %s behind", path)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("temp files left behind: %v", m)
	}
}

type shortSource struct{ *gguf.File }

func (s shortSource) WeightBytes(string) ([]byte, error) { return []byte{1, 2, 3}, nil }

// TestHostileGraph edits the graph section of a valid image (re-sealing the
// checksums) and expects errors, not panics.
func TestHostileGraph(t *testing.T) {
	img := image(t, Ref)
	for _, c := range []struct{ from, to, want string }{
		{`"Inputs":[`, `"Inputs":[99999,`, "names value 99999"},
		{`"Inputs":[`, `"Inputs":[-5,`, "names value -5"},
		{`"StateOf":-1`, `"StateOf":3`, "StateOf"},
		{`"Op":"mat_mul"`, `"Op":"frobnicate"`, "unknown op"},
		{`"Shape":[`, `"Shape":[-9,`, "bad dimension"},
		{`"Node":0,`, `"Node":123456,`, "names node 123456"},
		{`"Split":"cols"`, `"Split":"diagonal"`, "unknown split"},
		{`"Kind":"weight"`, `"Kind":"activation"`, "section graph"},
		{`"Logits":`, `"Bogus":1,"Logits":`, "unknown field"},
	} {
		b, err := editSection(img, secGraph, c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(b, OpenOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: %v, want %q", c.from, c.to, err, c.want)
		}
	}
	for _, c := range []struct{ sec, from, to, want string }{
		{secWeightsIndex, `"Type":"q4_K"`, `"Type":"q8_0"`, "is q8_0"},
		{secWeightsIndex, `"Mode":"ref"`, `"Mode":"cloud"`, "unknown weights mode"},
		{secMemory, `"ArenaBytes":`, `"ArenaBytes":1`, "section memory"},
		{secSource, `"SHA256":"`, `"SHA256":"zz`, "bad sha256"},
	} {
		b, err := editSection(img, c.sec, c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(b, OpenOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %s -> %s: %v, want %q", c.sec, c.from, c.to, err, c.want)
		}
	}
}

// editSection replaces the first occurrence of from by to in a section and
// rebuilds the file with correct checksums (moving the later sections).
func editSection(img []byte, name, from, to string) ([]byte, error) {
	_, entries, err := readHeader(img)
	if err != nil {
		return nil, err
	}
	var out []byte
	out = append(out, make([]byte, headerSize+len(entries)*entrySize)...)
	for i := range entries {
		e := &entries[i]
		data := img[e.Offset : e.Offset+e.Size]
		if e.Name == name {
			if !bytes.Contains(data, []byte(from)) {
				return nil, os.ErrNotExist
			}
			data = bytes.Replace(data, []byte(from), []byte(to), 1)
		}
		al := uint64(sectionAlign)
		if e.Name == secWeights {
			al = weightsAlign
		}
		for uint64(len(out))%al != 0 {
			out = append(out, 0)
		}
		e.Offset, e.Size, e.CRC = uint64(len(out)), uint64(len(data)), crc(data)
		out = append(out, data...)
	}
	for i, e := range entries {
		putEntry(out[headerSize+i*entrySize:], e)
	}
	putHeader(out, header{Version: FormatVersion, NSections: uint32(len(entries)), FileSize: uint64(len(out)), TableOffset: headerSize, TableCRC: crc(out[headerSize : headerSize+len(entries)*entrySize])})
	return out, nil
}

// synthImage makes a small ref-mode plan image from a synthetic model in
// memory (no fixtures needed), for fuzz seeds.
func synthImage(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := synth.Write(&buf, synth.Options{Preset: "llama-tiny", Type: "q8_0", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(src, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := compile(t, f, Ref)
	path := filepath.Join(dir, "plan.bin")
	if err := Write(path, p, f, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reseal recomputes the checksums of an image wherever its header and
// table are readable, so that fuzzed content reaches the decoders instead
// of stopping at a checksum mismatch.
func reseal(img []byte) []byte {
	if len(img) < headerSize || string(img[:8]) != Magic {
		return img
	}
	b := bytes.Clone(img)
	le := binary.LittleEndian
	n, toff := uint64(le.Uint32(b[12:])), le.Uint64(b[24:])
	size := uint64(len(b))
	if n > 0 && n <= maxSections && toff >= headerSize && toff <= size && size-toff >= n*entrySize {
		for i := range n {
			e := b[toff+i*entrySize:]
			off, sz := le.Uint64(e[24:]), le.Uint64(e[32:])
			if off <= size && size-off >= sz {
				le.PutUint32(e[40:], crc(b[off:off+sz]))
			}
		}
		le.PutUint32(b[32:], crc(b[toff:toff+n*entrySize]))
	}
	le.PutUint32(b[36:], crc(b[0:36]))
	return b
}

// FuzzParse feeds arbitrary images to Parse twice: as they are (checksums
// mostly fail) and resealed (the decoders and validators see the mutated
// content). Neither may panic.
func FuzzParse(f *testing.F) {
	img := synthImage(f)
	f.Add(img)
	f.Add(img[:headerSize+3*entrySize])
	f.Add([]byte(Magic))
	if b, err := editSection(img, secGraph, `"Inputs":[`, `"Inputs":[1,`); err == nil {
		f.Add(b)
	}
	// minfer's own q5_0x4 type where the image has another one
	for _, from := range []string{`"DType":"f32"`, `"DType":"q8_0"`, `"DType":"f16"`} {
		if b, err := editSection(img, secGraph, from, `"DType":"q5_0x4"`); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range [][]byte{data, reseal(data)} {
			l, err := Parse(d, OpenOptions{})
			if err == nil {
				for name := range l.Index {
					l.WeightBytes(name)
				}
			}
		}
	})
}

// sectionOf returns the bytes of one section of a valid image.
func sectionOf(t testing.TB, img []byte, name string) []byte {
	_, entries, err := readHeader(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name == name {
			return img[e.Offset : e.Offset+e.Size]
		}
	}
	t.Fatalf("no section %s", name)
	return nil
}

// FuzzGraph fuzzes the graph decoder and verifier directly.
func FuzzGraph(f *testing.F) {
	f.Add(sectionOf(f, synthImage(f), secGraph))
	f.Add([]byte(`{"Values":[{"Name":"x","Kind":"state","DType":"f32","Shape":[4,4],"StateOf":-1}],"Nodes":[],"Tokens":0,"Positions":0,"OutIDs":0,"Logits":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := decodeGraph(data)
		if err == nil {
			verifyGraph(g)
		}
	})
}

// FuzzVocab fuzzes the binary vocabulary decoder.
func FuzzVocab(f *testing.F) {
	f.Add(sectionOf(f, synthImage(f), secTokenizer))
	b, _ := encodeVocab(&tokenizer.Vocab{Tokens: []string{"a", "", "bc"}, Scores: []float32{}, BOS: 1, EOS: -1, UNK: -1, PAD: -1, EOT: -1})
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decodeVocab(data)
		if err == nil {
			b, err := encodeVocab(v)
			if err != nil {
				t.Fatal(err)
			}
			v2, err := decodeVocab(b)
			if err != nil {
				t.Fatalf("re-encoded vocab does not decode: %v", err)
			}
			// Compare encodings, not values: NaN scores are not DeepEqual.
			if b2, _ := encodeVocab(v2); !bytes.Equal(b, b2) {
				t.Fatal("re-encoded vocab does not round trip")
			}
		}
	})
}

// TestSlots: a plan compiled with several KV slots records them in its
// options and memory plans and reads back the same; options that disagree
// with the memory plans are refused; a one-slot plan's JSON has no Slots
// field (as plans written before slots existed, which read as one slot).
func TestSlots(t *testing.T) {
	f := openFixture(t, "qwen2-synth-q4_k_m.gguf")
	withSlots := func(n int) *Plan {
		p := compile(t, f, Embed)
		for _, mp := range p.Memory {
			o := mp.Options
			o.Slots = n
			q, err := alloc.PlanSchedule(p.Graph, map[string]*ir.Schedule{"prefill": p.Graph.Prefill, "decode": p.Graph.Decode}[mp.Schedule], o)
			if err != nil {
				t.Fatal(err)
			}
			p.Memory[mp.Schedule] = q
		}
		p.Options.Slots = n
		return p
	}
	p := withSlots(4)
	path := filepath.Join(t.TempDir(), "plan.bin")
	if err := Write(path, p, f, nil); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if l.Options.SlotCount() != 4 || l.Memory["decode"].Options.SlotCount() != 4 || l.Memory["prefill"].KVBytes != 4*compile(t, f, Embed).Memory["prefill"].KVBytes {
		t.Errorf("read back %d slots, memory %d slots, KV %d bytes", l.Options.SlotCount(), l.Memory["decode"].Options.SlotCount(), l.Memory["prefill"].KVBytes)
	}
	l.Close()
	p = withSlots(4)
	p.Options.Slots = 2
	wantErr(t, Write(path, p, f, nil), "2 KV slots, but the")
	p = withSlots(4)
	p.Options.Slots = -1
	wantErr(t, Write(path, p, f, nil), "KV slots")
	for _, v := range []any{compile(t, f, Embed).Options, compile(t, f, Embed).Memory["decode"].Options} {
		if b, _ := json.Marshal(v); strings.Contains(string(b), "Slots") {
			t.Errorf("one-slot JSON names Slots: %s", b)
		}
	}
}
