package pluginmgr

import (
	"bytes"
	"debug/elf"
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

// wholeBinary reports whether path is an ELF binary with all of its
// sections and section headers present. A linker and a Go build write the
// section headers last, at the end of the file, so a binary that is still
// being copied in fails this check until its last byte is there.
func wholeBinary(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	ef, err := elf.NewFile(f)
	if err != nil || len(ef.Sections) == 0 {
		return false
	}
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_NOBITS && s.Offset+s.FileSize > uint64(fi.Size()) {
			return false
		}
	}
	return true
}
