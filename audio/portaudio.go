package audio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// VerboseEnv, when set to a non-empty value in the environment, leaves
// ALSA's and JACK's own messages on stderr (for debugging a device).
const VerboseEnv = "AGENTHOST_AUDIO_VERBOSE"

// pa reference-counts PortAudio: it is initialized by the first user and
// terminated by the last, so that a device list taken after every stream
// closed is fresh (PortAudio only enumerates devices in Pa_Initialize).
// The mutex also serializes the package-global parts of the PortAudio
// binding (device list cache, stream open and close).
var pa struct {
	mu   sync.Mutex
	refs int
}

func paAcquireLocked() error {
	if pa.refs == 0 {
		if err := paInitialize(); err != nil {
			return fmt.Errorf("audio: initialize PortAudio: %w", err)
		}
	}
	pa.refs++
	return nil
}

func paReleaseLocked() {
	if pa.refs <= 0 {
		return
	}
	pa.refs--
	if pa.refs == 0 {
		_ = paTerminate()
	}
}

// Device describes one PortAudio device.
type Device struct {
	Index             int
	Name              string
	HostAPI           string
	MaxInputChannels  int
	MaxOutputChannels int
	DefaultRate       float64
	DefaultInput      bool
	DefaultOutput     bool
}

func (d Device) String() string {
	var flags []string
	if d.DefaultInput {
		flags = append(flags, "default input")
	}
	if d.DefaultOutput {
		flags = append(flags, "default output")
	}
	s := fmt.Sprintf("#%d %q (%s, in %d, out %d, %g Hz", d.Index, d.Name, d.HostAPI, d.MaxInputChannels, d.MaxOutputChannels, d.DefaultRate)
	if len(flags) > 0 {
		s += ", " + strings.Join(flags, ", ")
	}
	return s + ")"
}

// Devices lists every PortAudio input and output device.
func Devices() ([]Device, error) {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	if err := paAcquireLocked(); err != nil {
		return nil, err
	}
	defer paReleaseLocked()
	return listDevicesLocked()
}

func listDevicesLocked() ([]Device, error) {
	devs, err := paDevices()
	if err != nil {
		return nil, fmt.Errorf("audio: list devices: %w", err)
	}
	out := make([]Device, len(devs))
	for i, d := range devs {
		out[i] = d.Device
	}
	return out, nil
}

// ErrDeviceNotFound is wrapped by the DeviceError returned when no device
// matches Options.Device.
var ErrDeviceNotFound = errors.New("audio: device not found")

// DeviceError tells that no device matched, and lists those that exist.
type DeviceError struct {
	Query   string   // Options.Device as given
	Input   bool     // looking for a capture (true) or playback device
	Devices []Device // the devices of that direction that exist
}

func (e *DeviceError) Error() string {
	dir := "output"
	if e.Input {
		dir = "input"
	}
	q := e.Query
	if q == "" {
		q = "default"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "audio: %s device %q not found; ", dir, q)
	if len(e.Devices) == 0 {
		fmt.Fprintf(&b, "there are no %s devices", dir)
		return b.String()
	}
	fmt.Fprintf(&b, "%s devices:", dir)
	for i, d := range e.Devices {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " #%d %q", d.Index, d.Name)
	}
	return b.String()
}

func (e *DeviceError) Unwrap() error { return ErrDeviceNotFound }

// findDevice picks the device for query among devs: "" or "default" is the
// default device, a decimal number an index, anything else a
// case-insensitive name (exact match first, then substring).
func findDevice(devs []Device, query string, input bool) (Device, error) {
	var cands []Device
	for _, d := range devs {
		if (input && d.MaxInputChannels > 0) || (!input && d.MaxOutputChannels > 0) {
			cands = append(cands, d)
		}
	}
	notFound := &DeviceError{Query: query, Input: input, Devices: cands}
	q := strings.TrimSpace(query)
	if q == "" || strings.EqualFold(q, "default") {
		for _, d := range cands {
			if (input && d.DefaultInput) || (!input && d.DefaultOutput) {
				return d, nil
			}
		}
		// No default flagged: a device literally named "default".
		for _, d := range cands {
			if strings.EqualFold(d.Name, "default") {
				return d, nil
			}
		}
		return Device{}, notFound
	}
	if idx, err := strconv.Atoi(q); err == nil {
		for _, d := range cands {
			if d.Index == idx {
				return d, nil
			}
		}
		return Device{}, notFound
	}
	for _, d := range cands {
		if strings.EqualFold(d.Name, q) {
			return d, nil
		}
	}
	lq := strings.ToLower(q)
	for _, d := range cands {
		if strings.Contains(strings.ToLower(d.Name), lq) {
			return d, nil
		}
	}
	return Device{}, notFound
}

// candidates lists the (rate, channels) pairs to try, best first: o.Rate,
// then the device's default rate; a source tries mono, stereo and the most
// channels at each rate, a sink o.Channels first and at each rate before
// the other counts (stereo music at another rate before mono).
func candidates(o Options, defRate float64, maxCh int, input bool) []Format {
	rates := []int{o.DeviceRate}
	if o.DeviceRate <= 0 {
		rates = []int{o.Rate}
		if r := int(defRate + 0.5); r > 0 && r != o.Rate {
			rates = append(rates, r)
		}
	}
	chans := []int{o.DeviceChannels}
	if o.DeviceChannels <= 0 {
		chans = nil
		if !input && o.Channels > 1 && o.Channels <= maxCh {
			chans = append(chans, o.Channels)
		}
		for _, c := range []int{1, 2, maxCh} {
			if c <= maxCh && !slices.Contains(chans, c) {
				chans = append(chans, c)
			}
		}
		if len(chans) == 0 {
			chans = []int{1}
		}
	}
	var out []Format
	if input {
		for _, r := range rates {
			for _, c := range chans {
				out = append(out, Format{Rate: r, Channels: c})
			}
		}
		return out
	}
	for _, c := range chans {
		for _, r := range rates {
			out = append(out, Format{Rate: r, Channels: c})
		}
	}
	return out
}

// paStream is one open PortAudio blocking stream and its device.
type paStream struct {
	h     *paHandle
	buf   []int16
	fmt   Format
	dev   Device
	input bool
}

func (p *paStream) format() Format { return p.fmt }

func (p *paStream) latency() time.Duration { return p.h.latency(p.input) }
func (p *paStream) device() Device         { return p.dev }

func (p *paStream) read() ([]int16, error) {
	return p.buf, p.h.read(p.buf)
}

func (p *paStream) write(frames []int16) error { return p.h.write(frames) }

func (p *paStream) close() error {
	var err error
	if p.input {
		err = p.h.abort()
	} else {
		err = p.h.stop() // plays what is queued
	}
	pa.mu.Lock()
	defer pa.mu.Unlock()
	if cerr := p.h.close(); err == nil {
		err = cerr
	}
	paReleaseLocked()
	return err
}

// openPA makes one attempt at opening the device o selects.
func openPA(o Options, input bool) (*paStream, error) {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	if err := paAcquireLocked(); err != nil {
		return nil, err
	}
	st, err := openPALocked(o, input)
	if err != nil {
		paReleaseLocked()
		return nil, err
	}
	return st, nil
}

func openPALocked(o Options, input bool) (*paStream, error) {
	pdevs, err := paDevices()
	if err != nil {
		return nil, fmt.Errorf("audio: list devices: %w", err)
	}
	devs := make([]Device, len(pdevs))
	for i, d := range pdevs {
		devs[i] = d.Device
	}
	d, err := findDevice(devs, o.Device, input)
	if err != nil {
		return nil, err
	}
	var pd paDevice
	for _, x := range pdevs {
		if x.Index == d.Index {
			pd = x
		}
	}
	maxCh, lat := d.MaxOutputChannels, pd.highOutLatency
	dir := "output"
	if input {
		maxCh, lat, dir = d.MaxInputChannels, pd.highInLatency, "input"
	}
	if o.Latency > 0 {
		lat = o.Latency
	}
	var tried []string
	for _, f := range candidates(o, d.DefaultRate, maxCh, input) {
		if f.Channels > maxCh {
			tried = append(tried, f.String()+": too many channels")
			continue
		}
		if err := paSupported(d.Index, f.Channels, input, float64(f.Rate), lat); err != nil {
			tried = append(tried, fmt.Sprintf("%v: %v", f, err))
			continue
		}
		fpb := max(1, int(int64(f.Rate)*int64(o.Buffer)/int64(time.Second)))
		h, err := paOpen(d.Index, f.Channels, input, float64(f.Rate), fpb, lat)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%v: %v", f, err))
			continue
		}
		if err := h.start(); err != nil {
			h.close()
			tried = append(tried, fmt.Sprintf("%v: start: %v", f, err))
			continue
		}
		return &paStream{h: h, buf: make([]int16, fpb*f.Channels), fmt: f, dev: d, input: input}, nil
	}
	return nil, fmt.Errorf("audio: open %s device %s: %s", dir, d, strings.Join(tried, "; "))
}

// transient reports errors after which a stream goes on: an input overflow
// or output underflow loses some samples but the device is still there.
func transient(err error) bool {
	return errors.Is(err, paInputOverflowed) || errors.Is(err, paOutputUnderflowed)
}

// retryOpen calls open until it succeeds, waiting per o.Retry between
// attempts; it gives up only when ctx ends (or at once with o.FailFast).
func retryOpen[T any](ctx context.Context, o Options, what string, open func() (T, error)) (T, error) {
	var zero T
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return zero, fmt.Errorf("audio: open %s: %w", what, err)
		}
		v, err := open()
		if err == nil {
			if attempt > 1 {
				o.Logger.Info("audio device open", "dir", what, "attempts", attempt)
			}
			return v, nil
		}
		if o.FailFast || o.Retry.Base <= 0 {
			return zero, err
		}
		if o.OnRetry != nil {
			o.OnRetry(attempt, err)
		}
		d := o.Retry.Delay(attempt)
		o.Logger.Warn("audio device unavailable; retrying", "dir", what, "attempt", attempt, "retry_in", d, "err", err)
		if serr := sleepCtx(ctx, d); serr != nil {
			return zero, fmt.Errorf("%w (gave up after %d attempts: %w)", err, attempt, serr)
		}
	}
}

// devIn and devOut are what the source and sink need from a device stream
// (a PortAudio stream, or a fake in tests).
type devIn interface {
	read() ([]int16, error)
	format() Format
	device() Device
	close() error
}

type devOut interface {
	write(frames []int16) error
	format() Format
	device() Device
	close() error
}
