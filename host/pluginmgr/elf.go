package pluginmgr

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
)

// isELF reports whether the file at path starts like an ELF binary.
func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return err == nil && bytes.Equal(magic, []byte(elf.ELFMAG))
}

// wholeBinary reports whether path is an ELF binary with nothing missing.
func wholeBinary(path string) bool {
	return isELF(path) && missing(path) == ""
}

// missing says what the ELF binary at path lacks, "" when nothing: every
// segment the loader maps and, where it has section headers, every section
// must lie within the file. A linker and a Go build write the section
// headers last, at the end of the file, so a binary still being copied in
// lacks them until its last byte is there. A binary without section headers
// (sstrip, UPX, strip --strip-section-headers) is judged by its segments,
// which are the whole of what runs.
func missing(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	size := uint64(fi.Size())
	ef, err := elf.NewFile(f)
	if err != nil {
		return fmt.Sprintf("its ELF headers cannot be read in its %d bytes (%v)", size, err)
	}
	if len(ef.Progs) == 0 {
		return "it has no program headers: it is not a program"
	}
	for i, p := range ef.Progs {
		if p.Filesz > 0 && p.Off+p.Filesz > size {
			return fmt.Sprintf("segment %d ends at byte %d but the file has %d", i, p.Off+p.Filesz, size)
		}
	}
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_NOBITS && s.Offset+s.FileSize > size {
			return fmt.Sprintf("section %s ends at byte %d but the file has %d", s.Name, s.Offset+s.FileSize, size)
		}
	}
	return ""
}
