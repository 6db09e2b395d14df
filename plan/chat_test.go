package plan

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestChatTemplateSection: the template round-trips, its section is the
// only optional one (a reader that does not know it skips it), a plan
// without a template has no such section, and invalid UTF-8 is refused.
func TestChatTemplateSection(t *testing.T) {
	f := openFixture(t, "qwen2-synth-q4_k_m.gguf")
	for _, tmpl := range []string{"{{ messages[0].content }}\n", ""} {
		p := compile(t, f, Ref)
		p.ChatTemplate = tmpl
		path := filepath.Join(t.TempDir(), "plan.bin")
		if err := Write(path, p, f, nil); err != nil {
			t.Fatal(err)
		}
		img, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		l, err := Parse(img, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.ChatTemplate != tmpl {
			t.Fatalf("template %q, want %q", l.ChatTemplate, tmpl)
		}
		_, entries, err := readHeader(img)
		if err != nil {
			t.Fatal(err)
		}
		var found *entry
		for i, e := range entries {
			if e.Name == secChatTemplate {
				found = &entries[i]
			} else if e.Flags != flagRequired {
				t.Errorf("section %s flags %#x", e.Name, e.Flags)
			}
		}
		if (found != nil) != (tmpl != "") {
			t.Fatalf("template %q: section present %v", tmpl, found != nil)
		}
		if found == nil {
			continue
		}
		if found.Flags != 0 {
			t.Errorf("chat_template flags %#x, want 0 (optional)", found.Flags)
		}
		// Invalid UTF-8 with a valid checksum is refused by name.
		b := bytes.Clone(img)
		b[found.Offset] = 0xff
		e := *found
		e.CRC = crc(b[e.Offset : e.Offset+e.Size])
		rewriteEntry(t, b, e)
		_, err = Parse(b, OpenOptions{})
		wantErr(t, err, "section chat_template", "UTF-8")
	}
}

// rewriteEntry replaces a section's table entry and fixes the table and
// header checksums (what an editor of the file would do).
func rewriteEntry(t *testing.T, b []byte, e entry) {
	t.Helper()
	h, entries, err := readHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range entries {
		if x.Name == e.Name {
			putEntry(b[h.TableOffset+uint64(i)*entrySize:], e)
		}
	}
	h.TableCRC = crc(b[h.TableOffset : h.TableOffset+uint64(h.NSections)*entrySize])
	putHeader(b, h)
}
