package pluginmgr

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Sstrip is sstrip for the tests outside the package.
var Sstrip = sstrip

// sstrip returns b, a 64-bit little-endian ELF binary, without its section
// headers, as sstrip leaves it: e_shoff, e_shnum and e_shstrndx zeroed, and
// everything after the end of the last segment cut off. UPX and
// `strip --strip-section-headers` (binutils >= 2.41; bookworm has 2.40) also
// leave a binary that runs without section headers.
func sstrip(t *testing.T, b []byte) []byte {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB {
		t.Skipf("sstrip here handles only 64-bit little-endian ELF, not %v %v", f.Class, f.Data)
	}
	var end uint64
	for _, p := range f.Progs {
		end = max(end, p.Off+p.Filesz)
	}
	out := append([]byte(nil), b[:end]...)
	clear(out[0x28:0x30]) // e_shoff
	clear(out[0x3c:0x40]) // e_shnum, e_shstrndx
	return out
}

// TestMissing: what missing says of this test binary whole, cut short,
// without section headers, and without section headers cut short.
func TestMissing(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	stripped := sstrip(t, whole)
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		b    []byte
		want string // "" for whole
	}{
		{"whole", whole, ""},
		{"cut short", whole[:len(whole)/2], "ELF headers cannot be read"},
		{"without section headers", stripped, ""},
		{"without section headers, cut short", stripped[:len(stripped)*3/4], "ends at byte"},
		{"without program headers", append(append([]byte(nil), whole[:0x38]...), append([]byte{0, 0}, whole[0x3a:]...)...), "no program headers"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		if err := os.WriteFile(path, c.b, 0o755); err != nil {
			t.Fatal(err)
		}
		got := missing(path)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: missing = %q, want %q", c.name, got, c.want)
		}
		if wholeBinary(path) != (c.want == "") {
			t.Errorf("%s: wholeBinary = %v", c.name, !(c.want == ""))
		}
	}
}
