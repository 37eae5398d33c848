package audio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// FileSource reads a WAV (16-bit PCM) or raw s16le file and delivers mono
// samples at the wire rate, converting channels and rate as needed. It
// returns io.EOF at the end unless Options.Loop is set.
type FileSource struct {
	path      string
	f         *os.File
	r         *bufio.Reader
	format    Format
	dataStart int64
	dataLen   int64 // bytes; -1 when unknown (read to end of file)
	remaining int64
	loop      bool

	conv    *toWire
	raw     []byte
	frames  []int16
	pending []int16
	off     int
	ended   bool

	mu      sync.Mutex
	closing atomic.Bool
	closed  bool
}

// OpenFileSource opens path for reading. A file that starts with a RIFF/WAVE
// header is parsed as WAV (16-bit PCM, any rate and channel count); any
// other file is raw signed 16-bit little-endian in Options.RawFormat
// (default mono at Options.Rate), as is a named pipe, read as it comes.
// Options.Loop restarts a file at the end; wrap the source in Paced to
// read it in real time.
func OpenFileSource(path string, o Options) (*FileSource, error) {
	o = o.withDefaults()
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audio: open %s: %w", path, err)
	}
	s := &FileSource{path: path, f: f, r: bufio.NewReaderSize(f, 64<<10), loop: o.Loop, dataLen: -1}
	if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		// A pipe (a program that writes the microphone: arecord, a
		// simulator) is raw audio as it comes: no header, no rewind.
		s.format, s.remaining, s.loop = o.RawFormat, -1, false
		if s.conv, err = newToWire(s.format, o.Rate, o.Quality); err != nil {
			f.Close()
			return nil, fmt.Errorf("audio: %s: %w", path, err)
		}
		return s, nil
	}
	var magic [12]byte
	n, _ := io.ReadFull(f, magic[:])
	if n == 12 && string(magic[0:4]) == "RIFF" && string(magic[8:12]) == "WAVE" {
		if err := s.parseWAV(); err != nil {
			f.Close()
			return nil, fmt.Errorf("audio: %s: %w", path, err)
		}
	} else {
		s.format = o.RawFormat
		s.dataStart = 0
	}
	if err := s.rewind(); err != nil {
		f.Close()
		return nil, fmt.Errorf("audio: %s: %w", path, err)
	}
	if s.conv, err = newToWire(s.format, o.Rate, o.Quality); err != nil {
		f.Close()
		return nil, fmt.Errorf("audio: %s: %w", path, err)
	}
	return s, nil
}

// parseWAV reads chunks after the 12-byte RIFF header until "data".
func (s *FileSource) parseWAV() error {
	pos := int64(12)
	haveFmt := false
	for {
		var hdr [8]byte
		if _, err := s.f.ReadAt(hdr[:], pos); err != nil {
			return fmt.Errorf("WAV without a data chunk: %w", err)
		}
		id, size := string(hdr[0:4]), int64(binary.LittleEndian.Uint32(hdr[4:]))
		pos += 8
		switch id {
		case "fmt ":
			if size < 16 {
				return fmt.Errorf("WAV fmt chunk too short (%d bytes)", size)
			}
			b := make([]byte, min(size, 40))
			if _, err := s.f.ReadAt(b, pos); err != nil {
				return fmt.Errorf("WAV fmt chunk: %w", err)
			}
			tag := binary.LittleEndian.Uint16(b[0:])
			if tag == 0xFFFE && len(b) >= 26 { // WAVE_FORMAT_EXTENSIBLE: sub-format GUID starts at 24
				tag = binary.LittleEndian.Uint16(b[24:])
			}
			bits := binary.LittleEndian.Uint16(b[14:])
			if tag != 1 || bits != 16 {
				return fmt.Errorf("WAV format tag %d with %d bits per sample; only 16-bit PCM is supported", tag, bits)
			}
			s.format = Format{Rate: int(binary.LittleEndian.Uint32(b[4:])), Channels: int(binary.LittleEndian.Uint16(b[2:]))}
			if s.format.Rate < 1000 || s.format.Rate > 384000 || s.format.Channels <= 0 || s.format.Channels > 32 {
				return fmt.Errorf("WAV with an unusable format %v (rate 1000–384000 Hz, 1–32 channels)", s.format)
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return errors.New("WAV data chunk before fmt chunk")
			}
			s.dataStart = pos
			s.dataLen = size
			if st, err := s.f.Stat(); err == nil && (size == 0 || size == 0xFFFFFFFF || pos+size > st.Size()) {
				// Streaming writers leave the size at 0 or -1, and a
				// truncated file is shorter than claimed: read to the end.
				s.dataLen = -1
			}
			return nil
		}
		pos += size + size%2
	}
}

func (s *FileSource) rewind() error {
	if _, err := s.f.Seek(s.dataStart, io.SeekStart); err != nil {
		return err
	}
	s.r.Reset(s.f)
	s.remaining = s.dataLen
	return nil
}

// Format is the file's own format (before conversion to the wire format).
func (s *FileSource) Format() Format { return s.format }

// Read delivers up to len(p) mono wire-rate samples.
func (s *FileSource) Read(p []int16) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.closing.Load() {
		return 0, ErrClosed
	}
	n := 0 // as much as p takes, so that a paced reader waits once per read
	for n < len(p) {
		for s.off >= len(s.pending) {
			if s.ended {
				if n > 0 {
					return n, nil
				}
				return 0, io.EOF
			}
			if err := s.fill(); err != nil {
				if n > 0 {
					return n, nil
				}
				return 0, err
			}
		}
		k := copy(p[n:], s.pending[s.off:])
		s.off += k
		n += k
	}
	return n, nil
}

// fill reads the next block of the file into pending.
func (s *FileSource) fill() error {
	frameBytes := 2 * s.format.Channels
	want := int64(s.format.Rate/50) * int64(frameBytes) // 20 ms
	if s.remaining >= 0 {
		want = min(want, s.remaining/int64(frameBytes)*int64(frameBytes))
	}
	if cap(s.raw) < int(want) {
		s.raw = make([]byte, want)
	}
	buf := s.raw[:want]
	n, err := io.ReadFull(s.r, buf)
	n = n / frameBytes * frameBytes
	if s.remaining >= 0 {
		s.remaining -= int64(n)
	}
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return fmt.Errorf("audio: read %s: %w", s.path, err)
	}
	s.pending, s.off = s.pending[:0], 0
	if n > 0 {
		s.frames = s.frames[:0]
		for i := 0; i < n; i += 2 {
			s.frames = append(s.frames, int16(binary.LittleEndian.Uint16(buf[i:])))
		}
		var cerr error
		if s.pending, cerr = s.conv.append(s.pending, s.frames); cerr != nil {
			return cerr
		}
	}
	if n == 0 || err != nil || s.remaining == 0 {
		// End of the data.
		if s.loop && (n > 0 || s.dataStartHasData()) {
			return s.rewind()
		}
		var cerr error
		if s.pending, cerr = s.conv.flush(s.pending); cerr != nil {
			return cerr
		}
		s.ended = true
	}
	return nil
}

func (s *FileSource) dataStartHasData() bool {
	st, err := s.f.Stat()
	return err == nil && st.Size()-s.dataStart >= int64(2*s.format.Channels) && s.dataLen != 0
}

// Close closes the file.
func (s *FileSource) Close() error {
	s.closing.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.conv.close()
	return s.f.Close()
}

// WAVSink writes 16-bit PCM (mono, or interleaved frames) to a WAV file.
// The header's sizes are fixed up on Close.
type WAVSink struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	rate   int
	ch     int
	bytes  int64
	closed bool
	buf    []byte
}

// CreateWAVSink creates (or truncates) path and writes a WAV header for mono
// 16-bit PCM at rate.
func CreateWAVSink(path string, rate int) (*WAVSink, error) {
	return CreateWAVSinkFormat(path, Format{Rate: rate, Channels: 1})
}

// CreateWAVSinkFormat creates (or truncates) path and writes a WAV header
// for 16-bit PCM of format f; Write takes interleaved frames.
func CreateWAVSinkFormat(path string, f Format) (*WAVSink, error) {
	if f.Rate <= 0 || f.Channels < 1 || f.Channels > 32 {
		return nil, fmt.Errorf("audio: create %s: invalid format %v", path, f)
	}
	file, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("audio: create %s: %w", path, err)
	}
	s := &WAVSink{f: file, w: bufio.NewWriterSize(file, 64<<10), rate: f.Rate, ch: f.Channels}
	if _, err := s.w.Write(wavHeader(f.Rate, f.Channels, 0)); err != nil {
		file.Close()
		return nil, fmt.Errorf("audio: write %s: %w", path, err)
	}
	return s, nil
}

func wavHeader(rate, channels int, dataBytes int64) []byte {
	h := make([]byte, 44)
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(min(36+dataBytes, 0xFFFFFFFF)))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], uint16(channels))
	binary.LittleEndian.PutUint32(h[24:], uint32(rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(rate*channels*2))
	binary.LittleEndian.PutUint16(h[32:], uint16(channels*2))
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(min(dataBytes, 0xFFFFFFFF)))
	return h
}

// Format is the file's rate and channel count.
func (s *WAVSink) Format() Format { return Format{Rate: s.rate, Channels: s.ch} }

// Write appends samples (interleaved frames when the file has more than
// one channel).
func (s *WAVSink) Write(p []int16) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	s.buf = s.buf[:0]
	for _, v := range p {
		s.buf = binary.LittleEndian.AppendUint16(s.buf, uint16(v))
	}
	n, err := s.w.Write(s.buf)
	s.bytes += int64(n)
	return n / 2, err
}

// Close writes the final sizes into the header and closes the file.
func (s *WAVSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.w.Flush()
	if err == nil {
		_, err = s.f.WriteAt(wavHeader(s.rate, s.ch, s.bytes), 0)
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("audio: close %s: %w", s.f.Name(), err)
	}
	return nil
}

// LoadFile reads a whole WAV or raw s16le file (see OpenFileSource) as mono
// samples at rate; a file longer than limit is an error that names it.
func LoadFile(path string, rate int, limit time.Duration) ([]int16, error) {
	src, err := OpenFileSource(path, Options{Rate: rate})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var pcm []int16
	buf := make([]int16, 4096)
	for {
		n, err := src.Read(buf)
		pcm = append(pcm, buf[:n]...)
		if len(pcm) > int(limit.Seconds()*float64(rate)) {
			return nil, fmt.Errorf("%s is longer than %s", path, limit)
		}
		if errors.Is(err, io.EOF) {
			return pcm, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
}
