package voicetest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agenthost/agenthost/proto/voice"
)

// session is one client connection.
type session struct {
	s    *Server
	id   int
	conn net.Conn
	out  *writer

	auth voice.Auth
	mode string // manual, vad or auto
	opus bool   // client audio is Opus
	ttsO bool   // reply audio is Opus
	emoj bool

	mu       sync.Mutex
	calls    map[string]chan voice.Outcome
	turnText map[string]string
	turnPCM  map[string]int // samples received per task
	vad      map[string]*energyVAD
	reply    context.CancelFunc // the reply streaming now
	replyFor string
	received int
}

func newSession(s *Server, id int, conn net.Conn) *session {
	c := &session{s: s, id: id, conn: conn, calls: map[string]chan voice.Outcome{},
		turnText: map[string]string{}, turnPCM: map[string]int{}, vad: map[string]*energyVAD{}}
	c.out = newWriter(conn, s.opts.Faults, func(f voice.Frame) {
		s.mu.Lock()
		if !s.opts.ForgetAudio || f.Type != voice.TypeAudio {
			s.sent = append(s.sent, Received{Conn: id, Frame: f})
		}
		s.notifyLocked()
		s.mu.Unlock()
		s.log.Debug("send", "conn", id, "frame", f)
	})
	return c
}

func (c *session) send(f voice.Frame) error { return c.out.send(f) }

func (c *session) run() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		c.mu.Lock()
		if c.reply != nil {
			c.reply()
		}
		c.mu.Unlock()
		c.out.close()
		c.conn.Close()
	}()
	dec := voice.NewDecoder(c.conn)
	c.conn.SetReadDeadline(time.Now().Add(c.s.opts.AuthTimeout))
	first, err := dec.Decode()
	if err != nil {
		return fmt.Errorf("no AUTH within %s: %w", c.s.opts.AuthTimeout, err)
	}
	c.record(first)
	if err := c.authenticate(first); err != nil {
		c.send(voice.StatusFrame(c.s.opts.AuthFail))
		c.out.flush()
		return err
	}
	for {
		c.conn.SetReadDeadline(time.Now().Add(c.s.opts.IdleTimeout))
		f, err := dec.Decode()
		if err != nil {
			if voice.IsFrameError(err) {
				c.s.log.Warn("malformed frame from client", "conn", c.id, "err", err)
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("idle for %s", c.s.opts.IdleTimeout)
			}
			return err
		}
		c.record(f)
		if c.out.isSilent() {
			continue // a black hole reads, and does nothing more
		}
		if n := c.s.opts.Faults.DropAfter; n > 0 && c.received >= n {
			return fmt.Errorf("fault injection: dropped after %d frames", n)
		}
		if err := c.handle(ctx, f); err != nil {
			return err
		}
	}
}

func (c *session) record(f voice.Frame) {
	c.received++
	if f.Type == voice.TypeAudio || f.Type == voice.TypeStatus && voice.ClassifyStatus(f.Payload) == voice.StatusKindPing {
		c.s.log.Debug("recv", "conn", c.id, "frame", f) // every frame of sound, every keepalive: noise at info
	} else {
		c.s.log.Info("recv", "conn", c.id, "frame", f)
	}
	c.s.mu.Lock()
	if !c.s.opts.ForgetAudio || f.Type != voice.TypeAudio {
		c.s.received = append(c.s.received, Received{Conn: c.id, Frame: f})
	}
	c.s.notifyLocked()
	c.s.mu.Unlock()
}

func (c *session) authenticate(f voice.Frame) error {
	if f.Type != voice.TypeAuth {
		return fmt.Errorf("first frame was %s, not AUTH", f.Type)
	}
	a, err := voice.ParseAuth(f.Payload)
	if err != nil {
		return err
	}
	if err := c.checkToken(a.Token); err != nil {
		return err
	}
	c.auth = a
	c.mode, _ = a.Get("mode")
	if c.mode == "" {
		c.mode = "manual"
	}
	in, _ := a.Get("input_audio_format")
	outFmt, _ := a.Get("format")
	c.opus, c.ttsO = in == "opus", outFmt == "opus"
	if (c.opus || c.ttsO) && c.s.opts.Opus == nil {
		c.s.log.Warn("client asked for opus but this simulator has no Opus codec; using PCM", "conn", c.id)
		c.opus, c.ttsO = false, false
	}
	em, _ := a.Get("emoji_mode")
	c.emoj = em != "" && em != "false"
	c.s.mu.Lock()
	c.s.auths = append(c.s.auths, a)
	c.s.latest = c
	c.s.notifyLocked()
	c.s.mu.Unlock()
	if !c.s.opts.Faults.WithholdAuthAck {
		c.send(voice.StatusFrame(c.s.opts.AuthAck))
		c.unknownNoise()
	}
	return nil
}

func (c *session) checkToken(tok string) error {
	o := c.s.opts
	switch {
	case tok == "":
		return errors.New("empty token")
	case o.Token != "" && tok != o.Token:
		return errors.New("token mismatch")
	case len(o.Secret) > 0:
		_, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return o.Secret, nil }, jwt.WithValidMethods([]string{"HS256"}))
		if err != nil {
			return fmt.Errorf("bad JWT: %w", err)
		}
	}
	return nil
}

func (c *session) handle(ctx context.Context, f voice.Frame) error {
	if c.s.opts.Faults.IgnoreTurns {
		switch f.Type {
		case voice.TypeText, voice.TypeAudio, voice.TypeEnd, voice.TypeSpeak, voice.TypeListen:
			return nil
		}
	}
	switch f.Type {
	case voice.TypeStatus:
		switch voice.ClassifyStatus(f.Payload) {
		case voice.StatusKindPing:
			c.send(voice.StatusFrame(voice.StatusPong))
		case voice.StatusKindDisconnect:
			c.send(voice.StatusFrame(voice.StatusDisconnectAck))
			c.out.flush()
			select {
			case <-time.After(c.s.opts.DisconnectDelay):
			case <-ctx.Done():
			case <-c.s.done:
			}
			return errors.New("client disconnected")
		}
	case voice.TypeMCP:
		c.handleMCP(f)
	case voice.TypeText:
		c.mu.Lock()
		c.turnText[f.Task] += string(f.Payload)
		c.mu.Unlock()
		c.bargeIn(f.Task)
	case voice.TypeAudio:
		c.handleAudio(f)
	case voice.TypeEnd:
		c.endTurn(f.Task)
	case voice.TypeSpeak:
		c.bargeIn(f.Task)
		text := string(f.Payload)
		c.startReply(f.Task, func() string { return text })
	case voice.TypeListen:
		l, err := voice.ParseListen(f.Payload)
		if err != nil {
			c.s.log.Warn("bad LISTEN", "conn", c.id, "err", err)
			return nil
		}
		switch l.State {
		case voice.ListenStart:
			c.mu.Lock()
			c.vad[f.Task] = newEnergyVAD(c.s.opts.VADThreshold, c.s.opts.VADHang)
			c.turnPCM[f.Task] = 0
			c.mu.Unlock()
			c.send(voice.StatusFrame(voice.StatusListening))
		case voice.ListenStop:
			c.endTurn(f.Task)
		}
	}
	return nil
}

func (c *session) handleMCP(f voice.Frame) {
	v, err := voice.ParseMCP(f.Payload)
	if err != nil {
		c.s.log.Warn("bad MCP message", "conn", c.id, "err", err)
		return
	}
	switch m := v.(type) {
	case *voice.Register:
		c.s.mu.Lock()
		c.s.registers = append(c.s.registers, *m)
		c.s.notifyLocked()
		c.s.mu.Unlock()
	case *voice.Result:
		c.mu.Lock()
		ch := c.calls[m.CallID]
		delete(c.calls, m.CallID)
		c.mu.Unlock()
		if ch == nil {
			c.s.log.Warn("result for a call nobody is waiting for", "conn", c.id, "call_id", m.CallID)
			return
		}
		ch <- m.Result
	}
}

func (c *session) handleAudio(f voice.Frame) {
	pcm := f.Payload
	if c.opus {
		samples, err := c.s.opts.Opus.DecodeFrame(f.Payload)
		if err != nil {
			c.s.log.Warn("undecodable Opus audio", "conn", c.id, "task", f.Task, "err", err)
			return
		}
		pcm = int16sToBytes(samples)
	}
	c.s.mu.Lock()
	if !c.s.opts.ForgetAudio {
		c.s.audio[f.Task] = append(c.s.audio[f.Task], pcm...)
	}
	c.s.notifyLocked()
	c.s.mu.Unlock()

	c.mu.Lock()
	c.turnPCM[f.Task] += len(pcm) / 2
	v := c.vad[f.Task]
	if v == nil && c.mode == "auto" {
		v = newEnergyVAD(c.s.opts.VADThreshold, c.s.opts.VADHang)
		c.vad[f.Task] = v
	}
	c.mu.Unlock()
	if c.mode == "manual" || v == nil {
		c.bargeIn(f.Task)
		return
	}
	switch v.feed(pcm) {
	case vadSpeechStart:
		c.bargeIn(f.Task)
		c.send(voice.ListenFrame(f.Task, voice.ListenDetecting, "vad"))
	case vadSpeechEnd:
		c.send(voice.ListenFrame(f.Task, voice.ListenStop, "vad"))
		c.endTurn(f.Task)
	}
}

// bargeIn stops a reply that is streaming for another task.
func (c *session) bargeIn(task string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reply != nil && c.replyFor != task {
		c.s.log.Info("barge-in: reply interrupted", "conn", c.id, "task", c.replyFor, "by", task)
		c.reply()
		c.reply = nil
	}
}

func (c *session) endTurn(task string) {
	c.mu.Lock()
	text := c.turnText[task]
	samples := c.turnPCM[task]
	delete(c.turnText, task)
	delete(c.turnPCM, task)
	delete(c.vad, task)
	c.mu.Unlock()
	switch f := c.s.opts.Faults; {
	case f.WithholdReplies:
		return
	case f.FailReplies != "":
		c.send(voice.Frame{Type: voice.TypeStatus, Task: task, Payload: []byte(f.FailReplies)})
		return
	}
	c.startReply(task, func() string { return c.answer(text, samples) })
}

// answer builds the reply text. A user text that names a registered service
// runs it (JSON after the name becomes its params) and speaks the result.
func (c *session) answer(text string, samples int) string {
	if c.s.opts.ReplyText != "" {
		return c.s.opts.ReplyText
	}
	if text == "" {
		return fmt.Sprintf("I heard %.1f seconds of audio.", float64(samples)/16000)
	}
	if name, params := matchService(text, c.s.Services()); name != "" {
		ctx, cancel := context.WithTimeout(context.Background(), c.s.opts.CallTimeout)
		out, err := c.call(ctx, name, params)
		cancel()
		switch {
		case err != nil:
			return fmt.Sprintf("I could not use %s: %v", name, err)
		case !out.Success:
			return fmt.Sprintf("%s failed: %s", name, out.Error)
		default:
			return fmt.Sprintf("%s says: %s", name, dataText(out.Data))
		}
	}
	return "You said: " + text
}

// matchService picks the service a user's text asks for: one named in full
// (JSON after the name becomes its params), else the one whose name shares
// the most words with the text ("What time is it?" → get_current_time).
func matchService(text string, svcs map[string]voice.ServiceDef) (string, json.RawMessage) {
	params := json.RawMessage(`{}`)
	for name := range svcs {
		if i := strings.Index(text, name); i >= 0 {
			if rest := strings.TrimSpace(text[i+len(name):]); strings.HasPrefix(rest, "{") {
				params = json.RawMessage(rest)
			}
			return name, params
		}
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		words[w] = true
	}
	best, bestScore, tie := "", 0, false
	for name := range svcs {
		score := 0
		for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
			if len(w) > 3 && words[w] {
				score++
			}
		}
		switch {
		case score > bestScore:
			best, bestScore, tie = name, score, false
		case score == bestScore && score > 0:
			tie = true
		}
	}
	if tie {
		return "", nil
	}
	return best, params
}

func dataText(d json.RawMessage) string {
	var s string
	if json.Unmarshal(d, &s) == nil {
		return s
	}
	return string(d)
}

func (c *session) call(ctx context.Context, method string, params any) (voice.Outcome, error) {
	p, err := marshalParams(params)
	if err != nil {
		return voice.Outcome{}, err
	}
	id := c.s.nextCallID()
	payload, err := voice.MarshalMCP(voice.MCPCall, voice.Call{CallID: id, Method: method, Params: p})
	if err != nil {
		return voice.Outcome{}, err
	}
	ch := make(chan voice.Outcome, 1)
	c.mu.Lock()
	c.calls[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
	}()
	if err := c.send(voice.MCPFrame(payload)); err != nil {
		return voice.Outcome{}, err
	}
	select {
	case out := <-ch:
		return out, nil
	case <-ctx.Done():
		return voice.Outcome{}, fmt.Errorf("voicesim: no result for %s (call_id %s): %w", method, id, ctx.Err())
	}
}

// startReply streams EMOJI, TEXT, audio and END_FRAME for task, replacing any
// reply still streaming. text runs in the reply's goroutine, since it may wait
// for an MCP result that the session's read loop delivers.
func (c *session) startReply(task string, text func() string) { c.startReplyPCM(task, text, nil) }

// startReplyPCM is startReply with its own audio (nil: the configured reply).
func (c *session) startReplyPCM(task string, text func() string, pcm []byte) {
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	if c.reply != nil {
		c.reply()
	}
	c.reply, c.replyFor = cancel, task
	c.mu.Unlock()
	c.s.wg.Add(1)
	go func() {
		defer c.s.wg.Done()
		defer func() {
			c.mu.Lock()
			if c.replyFor == task && c.reply != nil {
				c.reply = nil
			}
			c.mu.Unlock()
			cancel()
		}()
		c.streamReply(ctx, task, text(), pcm)
	}()
}

func (c *session) streamReply(ctx context.Context, task, text string, pcm []byte) {
	o := c.s.opts
	seq := 0
	if c.emoj {
		c.send(voice.EmojiFrame(task, voice.Emoji{Emoji: o.Emoji}))
	}
	text = strings.NewReplacer(voice.EndMarker, "", voice.StartMarker, "").Replace(text)
	if err := c.send(voice.Frame{Type: voice.TypeText, Task: task, Seq: seq, Payload: []byte(text)}); err != nil {
		return
	}
	seq++
	if pcm == nil {
		pcm = o.ReplyPCM
	}
	if pcm == nil {
		pcm = tone(o.ToneHz, o.ReplyDuration)
	}
	step := int(o.FrameDuration.Seconds()*16000) * 2
	tick := time.NewTicker(o.FrameDuration)
	defer tick.Stop()
	for off := 0; off < len(pcm); off += step {
		if ctx.Err() != nil {
			return
		}
		chunk := pcm[off:min(off+step, len(pcm))]
		payload := append([]byte(nil), chunk...)
		if c.ttsO {
			pcm := bytesToInt16s(chunk)
			pcm = append(pcm, make([]int16, step/2-len(pcm))...) // Opus codes whole frames
			enc, err := o.Opus.EncodeFrame(pcm)
			if err != nil {
				c.s.log.Warn("opus encode", "err", err)
				return
			}
			payload = enc
		} else {
			voice.SanitizeAudio(payload)
		}
		if c.send(voice.Frame{Type: voice.TypeAudio, Task: task, Seq: seq, Payload: payload}) != nil {
			return
		}
		seq++
		if o.Pace {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}
	if !o.Faults.DropEnd {
		c.send(voice.Frame{Type: voice.TypeEnd, Task: task, Seq: seq})
	}
	c.unknownNoise()
}

func (c *session) unknownNoise() {
	if !c.s.opts.Faults.Unknown {
		return
	}
	c.send(voice.Frame{Type: 0x0a, Task: voice.SystemTask, Payload: []byte("mystery")})
	c.send(voice.StatusFrame("##INFO:SOMETHING_NEW 42"))
}

// tone returns d of a sine at hz, 16 kHz s16le mono, at half scale.
func tone(hz float64, d time.Duration) []byte {
	n := int(d.Seconds() * 16000)
	b := make([]byte, 2*n)
	for i := range n {
		v := int16(16000 * math.Sin(2*math.Pi*hz*float64(i)/16000))
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

func int16sToBytes(s []int16) []byte {
	b := make([]byte, 2*len(s))
	for i, v := range s {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

func bytesToInt16s(b []byte) []int16 {
	s := make([]int16, len(b)/2)
	for i := range s {
		s[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return s
}
