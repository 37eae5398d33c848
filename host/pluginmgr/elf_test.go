package pluginmgr_test

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
)

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

// TestPluginWithoutSectionHeadersIsLoaded: a plugin binary without section
// headers (sstrip, UPX) is started like any other, not taken for a file
// still being written.
func TestPluginWithoutSectionHeadersIsLoaded(t *testing.T) {
	x := startManager(t, nil, func(p *config.Plugins) { p.Debounce = config.Duration(50 * time.Millisecond) })
	b, err := os.ReadFile(faultyBin(t))
	if err != nil {
		t.Fatal(err)
	}
	stripped := filepath.Join(t.TempDir(), "faulty")
	if err := os.WriteFile(stripped, sstrip(t, b), 0o755); err != nil {
		t.Fatal(err)
	}
	install(t, stripped, x.dir, "faulty", 0)
	x.waitStatus("faulty", "ready", ready)
	x.running("faulty", "faulty_ok")
}

// TestIncompleteBinaryIsRefusedWithAReason: a binary that stays cut short
// (a copy that died half way) is not waited on for ever: once it has not
// changed for the debounce it is refused at WARN, saying why, and started
// when its missing part arrives.
func TestIncompleteBinaryIsRefusedWithAReason(t *testing.T) {
	x := startManager(t, nil, func(p *config.Plugins) { p.Debounce = config.Duration(50 * time.Millisecond) })
	b, err := os.ReadFile(faultyBin(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(x.dir, "faulty")
	if err := os.WriteFile(path, b[:len(b)/2], 0o755); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !hasLine(x.log.String(), "level=WARN", "plugin=faulty", "incomplete") {
		if time.Now().After(deadline) {
			t.Fatal("no WARN line says the binary is incomplete")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := x.status("faulty"); s.Name != "" && s.PID != 0 {
		t.Fatalf("an incomplete binary was started: %+v", s)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b[len(b)/2:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	x.waitStatus("faulty", "ready", ready)
	x.running("faulty", "faulty_ok")
}

// hasLine reports whether one line of log holds every one of parts.
func hasLine(log string, parts ...string) bool {
	for _, l := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}
