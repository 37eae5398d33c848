package capture

// A small cgo binding of speexdsp (Debian libspeexdsp1, the same 1.2.1 API
// on bookworm and trixie and on every architecture): the MDF echo canceller
// and the preprocessor (noise suppression, residual echo suppression).

/*
#cgo pkg-config: speexdsp
#include <stdlib.h>
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>

static int ah_echo_rate(SpeexEchoState *st, int rate) {
	return speex_echo_ctl(st, SPEEX_ECHO_SET_SAMPLING_RATE, &rate);
}

static int ah_echo_ir_size(SpeexEchoState *st) {
	spx_int32_t n = 0;
	speex_echo_ctl(st, SPEEX_ECHO_GET_IMPULSE_RESPONSE_SIZE, &n);
	return n;
}

static void ah_echo_ir(SpeexEchoState *st, spx_int32_t *h) {
	speex_echo_ctl(st, SPEEX_ECHO_GET_IMPULSE_RESPONSE, h);
}

static int ah_pp_int(SpeexPreprocessState *st, int req, int v) {
	return speex_preprocess_ctl(st, req, &v);
}

static int ah_pp_echo(SpeexPreprocessState *st, SpeexEchoState *e) {
	return speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_ECHO_STATE, e);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// speexEcho is one speexdsp MDF echo canceller.
type speexEcho struct {
	st    *C.SpeexEchoState
	frame int
}

func newSpeexEcho(frame, tail, rate int) (*speexEcho, error) {
	st := C.speex_echo_state_init(C.int(frame), C.int(tail))
	if st == nil {
		return nil, errors.New("speexdsp: cannot make an echo canceller")
	}
	if C.ah_echo_rate(st, C.int(rate)) != 0 {
		C.speex_echo_state_destroy(st)
		return nil, fmt.Errorf("speexdsp: rate %d not accepted", rate)
	}
	return &speexEcho{st: st, frame: frame}, nil
}

// cancel removes the echo of play from rec into out (all one frame long).
func (e *speexEcho) cancel(rec, play, out []int16) {
	C.speex_echo_cancellation(e.st, (*C.spx_int16_t)(unsafe.Pointer(&rec[0])),
		(*C.spx_int16_t)(unsafe.Pointer(&play[0])), (*C.spx_int16_t)(unsafe.Pointer(&out[0])))
}

// impulseResponse returns the filter's impulse response (its length is a
// whole number of frames), into h if it is long enough.
func (e *speexEcho) impulseResponse(h []int32) []int32 {
	n := int(C.ah_echo_ir_size(e.st))
	if cap(h) < n {
		h = make([]int32, n)
	}
	h = h[:n]
	C.ah_echo_ir(e.st, (*C.spx_int32_t)(unsafe.Pointer(&h[0])))
	return h
}

func (e *speexEcho) reset() { C.speex_echo_state_reset(e.st) }

func (e *speexEcho) close() {
	if e.st != nil {
		C.speex_echo_state_destroy(e.st)
		e.st = nil
	}
}

// speexPre is one speexdsp preprocessor.
type speexPre struct {
	st *C.SpeexPreprocessState
}

// Preprocessor requests (speex_preprocess.h).
const (
	ppDenoise            = C.SPEEX_PREPROCESS_SET_DENOISE
	ppAGC                = C.SPEEX_PREPROCESS_SET_AGC
	ppVAD                = C.SPEEX_PREPROCESS_SET_VAD
	ppDereverb           = C.SPEEX_PREPROCESS_SET_DEREVERB
	ppNoiseSuppress      = C.SPEEX_PREPROCESS_SET_NOISE_SUPPRESS
	ppEchoSuppress       = C.SPEEX_PREPROCESS_SET_ECHO_SUPPRESS
	ppEchoSuppressActive = C.SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE
)

func newSpeexPre(frame, rate int) (*speexPre, error) {
	st := C.speex_preprocess_state_init(C.int(frame), C.int(rate))
	if st == nil {
		return nil, errors.New("speexdsp: cannot make a preprocessor")
	}
	p := &speexPre{st: st}
	// Only what a stage asks for: no AGC or dereverberation (the VAD is off by default).
	for _, req := range []C.int{ppAGC, ppDereverb} {
		p.set(req, 0)
	}
	return p, nil
}

func (p *speexPre) set(req C.int, v int) { C.ah_pp_int(p.st, req, C.int(v)) }

func (p *speexPre) setEcho(e *speexEcho) { C.ah_pp_echo(p.st, e.st) }

// run processes one frame in place.
func (p *speexPre) run(frame []int16) {
	C.speex_preprocess_run(p.st, (*C.spx_int16_t)(unsafe.Pointer(&frame[0])))
}

func (p *speexPre) close() {
	if p.st != nil {
		C.speex_preprocess_state_destroy(p.st)
		p.st = nil
	}
}
