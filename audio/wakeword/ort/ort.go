// Package ort runs openWakeWord's models with ONNX Runtime, loaded at run
// time from a shared library (Debian trixie's libonnxruntime1.21, or the
// libonnxruntime.so.1 of the npm package onnxruntime-node). It implements
// wakeword.Runtime. Only the detector's own process links it: the library
// is large, and a fault in it must not reach the host.
//
// The binding (github.com/yalue/onnxruntime_go v1.13.0) asks the library
// for C API version APIVersion, which every ONNX Runtime from 1.20 on
// serves; newer bindings ask for newer APIs and do not load Debian's 1.21.
package ort

import (
	"fmt"
	"os"
	"sync"

	onnx "github.com/yalue/onnxruntime_go"
)

// APIVersion is the ONNX Runtime C API version the binding asks for: a
// library older than 1.<APIVersion> cannot serve it.
const APIVersion = 20

var (
	envMu   sync.Mutex
	envLib  string
	envErr  error
	envOnce bool
)

// Init loads the ONNX Runtime library at path once per process and returns
// its version.
func Init(path string) (string, error) {
	envMu.Lock()
	defer envMu.Unlock()
	if envOnce {
		if envErr == nil && path != envLib {
			return "", fmt.Errorf("onnxruntime: %s is loaded already; cannot load %s too", envLib, path)
		}
		return onnx.GetVersion(), envErr
	}
	envOnce, envLib = true, path
	if _, err := os.Stat(path); err != nil {
		envErr = fmt.Errorf("the ONNX Runtime library %s: %w", path, err)
		return "", envErr
	}
	onnx.SetSharedLibraryPath(path)
	if err := onnx.InitializeEnvironment(); err != nil {
		if v := onnx.GetVersion(); v != "" {
			envErr = fmt.Errorf("the ONNX Runtime library %s is version %s, which does not serve C API %d (ONNX Runtime 1.%d or later is needed): %w", path, v, APIVersion, APIVersion, err)
		} else {
			envErr = fmt.Errorf("the ONNX Runtime library %s does not load: %w", path, err)
		}
		return "", envErr
	}
	return onnx.GetVersion(), nil
}

// Version is the loaded library's version ("" before Init).
func Version() string {
	envMu.Lock()
	defer envMu.Unlock()
	if !envOnce || envErr != nil {
		return ""
	}
	return onnx.GetVersion()
}

// model is one ONNX model with one float input and one float output.
type model struct {
	path    string
	session *onnx.DynamicAdvancedSession
	in, out onnx.InputOutputInfo
}

func openModel(path string, opts *onnx.SessionOptions) (*model, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	ins, outs, err := onnx.GetInputOutputInfo(path)
	if err != nil {
		return nil, fmt.Errorf("%s is not an ONNX model ONNX Runtime can read: %w", path, err)
	}
	if len(ins) != 1 || len(outs) != 1 {
		return nil, fmt.Errorf("%s has %d inputs and %d outputs; an openWakeWord model has one of each", path, len(ins), len(outs))
	}
	if ins[0].DataType != onnx.TensorElementDataTypeFloat || outs[0].DataType != onnx.TensorElementDataTypeFloat {
		return nil, fmt.Errorf("%s: input %s is %s and output %s is %s; float32 tensors are needed", path, ins[0].Name, ins[0].DataType, outs[0].Name, outs[0].DataType)
	}
	s, err := onnx.NewDynamicAdvancedSession(path, []string{ins[0].Name}, []string{outs[0].Name}, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &model{path: path, session: s, in: ins[0], out: outs[0]}, nil
}

// run feeds data in the given shape and returns the output's values.
func (m *model) run(shape onnx.Shape, data []float32) ([]float32, error) {
	in, err := onnx.NewTensor(shape, data)
	if err != nil {
		return nil, err
	}
	defer in.Destroy()
	outs := []onnx.Value{nil}
	if err := m.session.Run([]onnx.Value{in}, outs); err != nil {
		return nil, err
	}
	defer outs[0].Destroy()
	t, ok := outs[0].(*onnx.Tensor[float32])
	if !ok {
		return nil, fmt.Errorf("output %s is not a float32 tensor", m.out.Name)
	}
	return append([]float32(nil), t.GetData()...), nil
}

func (m *model) close() {
	if m != nil && m.session != nil {
		m.session.Destroy()
	}
}

// Runtime holds the feature models and the wake models.
type Runtime struct {
	mel, embed *model
	wake       []*model
	window     []int
}

// Paths name the model files.
type Paths struct {
	Mel, Embedding string
	Wake           []string
}

// Open loads the models (Init must have loaded the library); with no wake
// model it runs the feature models alone (for heads run in Go, see
// wakeword.WithHeads). Each session runs on one thread: the detector is
// always on and must stay light.
func Open(p Paths) (*Runtime, error) {
	opts, err := onnx.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer opts.Destroy()
	if err := opts.SetIntraOpNumThreads(1); err != nil {
		return nil, err
	}
	if err := opts.SetInterOpNumThreads(1); err != nil {
		return nil, err
	}
	r := &Runtime{}
	fail := func(err error) (*Runtime, error) {
		r.Close()
		return nil, err
	}
	if r.mel, err = openModel(p.Mel, opts); err != nil {
		return fail(fmt.Errorf("the mel model: %w", err))
	}
	if r.embed, err = openModel(p.Embedding, opts); err != nil {
		return fail(fmt.Errorf("the embedding model: %w", err))
	}
	for _, w := range p.Wake {
		m, err := openModel(w, opts)
		if err != nil {
			return fail(fmt.Errorf("the wake model: %w", err))
		}
		r.wake = append(r.wake, m)
		d := m.in.Dimensions
		if len(d) != 3 || d[2] != 96 || d[1] <= 0 {
			return fail(fmt.Errorf("%s takes %v; an openWakeWord model takes [1, N, 96] embeddings", w, d))
		}
		if n := m.out.Dimensions; len(n) != 2 || n[1] != 1 {
			return fail(fmt.Errorf("%s gives %v; only models with one score ([1, 1]) are supported", w, n))
		}
		r.window = append(r.window, int(d[1]))
	}
	return r, nil
}

// Mel implements wakeword.Runtime.
func (r *Runtime) Mel(samples []float32) ([]float32, error) {
	return r.mel.run(onnx.NewShape(1, int64(len(samples))), samples)
}

// Embed implements wakeword.Runtime.
func (r *Runtime) Embed(mel []float32) ([]float32, error) {
	return r.embed.run(onnx.NewShape(1, int64(len(mel)/32), 32, 1), mel)
}

// Score implements wakeword.Runtime.
func (r *Runtime) Score(i int, emb []float32) (float32, error) {
	out, err := r.wake[i].run(onnx.NewShape(1, int64(len(emb)/96), 96), emb)
	if err != nil {
		return 0, err
	}
	if len(out) != 1 {
		return 0, fmt.Errorf("%d values, want 1", len(out))
	}
	return out[0], nil
}

// Window implements wakeword.Runtime.
func (r *Runtime) Window(i int) int { return r.window[i] }

// Models implements wakeword.Runtime.
func (r *Runtime) Models() int { return len(r.wake) }

// Close releases the sessions.
func (r *Runtime) Close() {
	r.mel.close()
	r.embed.close()
	for _, m := range r.wake {
		m.close()
	}
}
