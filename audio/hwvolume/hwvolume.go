// Package hwvolume sets a sound card's hardware volume: an ALSA simple mixer
// control ("PCM", "Speaker", "Master"), through libasound's mixer API (a
// small cgo binding; Debian's libasound2, which PortAudio links already).
package hwvolume

/*
#cgo pkg-config: alsa
#include <stdlib.h>
#include <alsa/asoundlib.h>
*/
import "C"

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"
)

// Control is one playback volume control of a card.
type Control struct {
	mu        sync.Mutex
	h         *C.snd_mixer_t
	elem      *C.snd_mixer_elem_t
	card      string
	name      string
	rangeDB   float64
	min, max  C.long // raw steps
	hasDB     bool
	dbMax     C.long // in 0.01 dB
	dbMin     C.long
	hasSwitch bool
}

// Open finds the control that spec names: "NAME" on the default card, or
// "CARD/NAME" ("hw:1/Speaker", "default/PCM"). rangeDB is the volume
// curve's span (see device.Curve): volume 1 is that far below 100.
func Open(spec string, rangeDB float64) (*Control, error) {
	card, name := "default", strings.TrimSpace(spec)
	if i := strings.LastIndex(spec, "/"); i >= 0 {
		card, name = strings.TrimSpace(spec[:i]), strings.TrimSpace(spec[i+1:])
	}
	if name == "" || card == "" {
		return nil, fmt.Errorf("mixer %q: write NAME or CARD/NAME, like PCM or hw:1/Speaker", spec)
	}
	c := &Control{card: card, name: name, rangeDB: rangeDB}
	if rc := C.snd_mixer_open(&c.h, 0); rc < 0 {
		return nil, c.err("opening the mixer", rc)
	}
	ccard := C.CString(card)
	defer C.free(unsafe.Pointer(ccard))
	if rc := C.snd_mixer_attach(c.h, ccard); rc < 0 {
		C.snd_mixer_close(c.h)
		return nil, c.err("opening card "+card+" (is it there? `aplay -l` lists the cards)", rc)
	}
	if rc := C.snd_mixer_selem_register(c.h, nil, nil); rc < 0 {
		C.snd_mixer_close(c.h)
		return nil, c.err("reading the controls", rc)
	}
	if rc := C.snd_mixer_load(c.h); rc < 0 {
		C.snd_mixer_close(c.h)
		return nil, c.err("loading the controls", rc)
	}
	var sid *C.snd_mixer_selem_id_t
	if rc := C.snd_mixer_selem_id_malloc(&sid); rc < 0 {
		C.snd_mixer_close(c.h)
		return nil, c.err("allocating", rc)
	}
	defer C.snd_mixer_selem_id_free(sid)
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	C.snd_mixer_selem_id_set_index(sid, 0)
	C.snd_mixer_selem_id_set_name(sid, cname)
	c.elem = C.snd_mixer_find_selem(c.h, sid)
	if c.elem == nil || C.snd_mixer_selem_has_playback_volume(c.elem) == 0 {
		names := c.names()
		C.snd_mixer_close(c.h)
		return nil, fmt.Errorf("mixer %s: card %s has no playback volume control %q; it has: %s (`amixer -D %s scontrols` lists them)",
			spec, card, name, strings.Join(names, ", "), card)
	}
	C.snd_mixer_selem_get_playback_volume_range(c.elem, &c.min, &c.max)
	c.hasDB = C.snd_mixer_selem_get_playback_dB_range(c.elem, &c.dbMin, &c.dbMax) == 0 && c.dbMax > c.dbMin
	c.hasSwitch = C.snd_mixer_selem_has_playback_switch(c.elem) != 0
	if c.max <= c.min {
		C.snd_mixer_close(c.h)
		return nil, fmt.Errorf("mixer %s: the control has no range of volumes", spec)
	}
	return c, nil
}

func (c *Control) err(what string, rc C.int) error {
	return fmt.Errorf("mixer %s/%s: %s: %s", c.card, c.name, what, C.GoString(C.snd_strerror(rc)))
}

// names lists the card's playback volume controls.
func (c *Control) names() []string {
	var out []string
	for e := C.snd_mixer_first_elem(c.h); e != nil; e = C.snd_mixer_elem_next(e) {
		if C.snd_mixer_selem_has_playback_volume(e) != 0 {
			out = append(out, C.GoString(C.snd_mixer_selem_get_name(e)))
		}
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// String names the control.
func (c *Control) String() string { return c.card + "/" + c.name }

// SetVolume sets level (0–100): in decibels on the curve when the control
// reports them (volume 100 is the control's top, each step the same number
// of dB), else as a fraction of its steps; 0 turns the control's switch off
// (or its volume down).
func (c *Control) SetVolume(level int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return fmt.Errorf("mixer %s: closed", c)
	}
	level = max(0, min(100, level))
	if c.hasSwitch {
		on := C.int(0)
		if level > 0 {
			on = 1
		}
		if rc := C.snd_mixer_selem_set_playback_switch_all(c.elem, on); rc < 0 {
			return c.err("switching", rc)
		}
	}
	if level == 0 {
		if rc := C.snd_mixer_selem_set_playback_volume_all(c.elem, c.min); rc < 0 {
			return c.err("setting the volume", rc)
		}
		return nil
	}
	db := -c.rangeDB * float64(100-level) / 99 // 0 at the top
	if c.hasDB {
		target := c.dbMax + C.long(math.Round(db*100))
		target = max(target, c.dbMin)
		if rc := C.snd_mixer_selem_set_playback_dB_all(c.elem, target, 1); rc < 0 {
			return c.err("setting the volume", rc)
		}
		return nil
	}
	gain := math.Pow(10, db/20)
	raw := c.min + C.long(math.Round(float64(c.max-c.min)*gain))
	if rc := C.snd_mixer_selem_set_playback_volume_all(c.elem, raw); rc < 0 {
		return c.err("setting the volume", rc)
	}
	return nil
}

// Close lets the card go.
func (c *Control) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h != nil {
		C.snd_mixer_close(c.h)
		c.h = nil
	}
	return nil
}
