package trigger

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// termios reads the mode of the terminal f.
func termios(t *testing.T, f *os.File) unix.Termios {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var tio *unix.Termios
	rc.Control(func(fd uintptr) { tio, err = unix.IoctlGetTermios(int(fd), unix.TCGETS) })
	if err != nil {
		t.Fatalf("TCGETS: %v", err)
	}
	return *tio
}

func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close(); tty.Close() })
	return master, tty
}

func write(t *testing.T, f *os.File, s string) {
	t.Helper()
	if _, err := io.WriteString(f, s); err != nil {
		t.Fatalf("write %q to the terminal: %v", s, err)
	}
}

func expect(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	if got := <-ch; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// The space bar and Enter toggle, other keys do nothing; while Key runs the
// terminal is non-canonical without echo but keeps ISIG; when ctx ends the
// held press is released and the terminal's mode is what it was.
func TestKeyTogglesOnATerminal(t *testing.T) {
	master, tty := openPTY(t)
	before := termios(t, tty)
	if before.Lflag&unix.ICANON == 0 || before.Lflag&unix.ECHO == 0 || before.Lflag&unix.ISIG == 0 {
		t.Fatalf("a new pseudo-terminal is not canonical with echo and signals: lflag %#x", before.Lflag)
	}

	r := &recorder{ch: make(chan string, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- Key(ctx, tty, r, testLog(t)) }()

	write(t, master, " ")
	expect(t, r.ch, "press")
	during := termios(t, tty)
	if during.Lflag&unix.ICANON != 0 || during.Lflag&unix.ECHO != 0 {
		t.Errorf("while Key runs the terminal is still canonical or echoes: lflag %#x", during.Lflag)
	}
	if during.Lflag&unix.ISIG == 0 {
		t.Errorf("Key turned ISIG off: Ctrl-C would no longer reach the process")
	}
	write(t, master, "\r") // Enter
	expect(t, r.ch, "release")
	write(t, master, "xq\x1b[A")
	write(t, master, " ")
	expect(t, r.ch, "press") // not release: the other keys did not toggle

	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Key: %v", err)
	}
	// Key has returned, so every call it made has been recorded: the last
	// is the held press, released as Key stopped.
	if after := termios(t, tty); after != before {
		t.Errorf("terminal mode not restored:\nbefore %+v\nafter  %+v", before, after)
	}
	if got, want := r.events(), []string{"press", "release", "press", "release"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// One Enter sent as CR LF (a terminal without ICRNL) is one toggle.
func TestKeyCRLFIsOneEnter(t *testing.T) {
	master, tty := openPTY(t)
	r := &recorder{ch: make(chan string, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- Key(ctx, tty, r, testLog(t)) }()

	write(t, master, " ")
	expect(t, r.ch, "press")
	tio := termios(t, tty)
	tio.Iflag &^= unix.ICRNL
	rc, _ := tty.SyscallConn()
	var err error
	rc.Control(func(fd uintptr) { err = unix.IoctlSetTermios(int(fd), unix.TCSETS, &tio) })
	if err != nil {
		t.Fatal(err)
	}
	write(t, master, "\r\n")
	expect(t, r.ch, "release")
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Key: %v", err)
	}
	// A second toggle from the LF would have pressed again (and Key would
	// have released that press as it stopped).
	if got, want := r.events(), []string{"press", "release"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// When the terminal hangs up Key returns nil and releases the held press.
func TestKeyReturnsWhenTheTerminalHangsUp(t *testing.T) {
	master, tty := openPTY(t)
	r := &recorder{ch: make(chan string, 16)}
	errc := make(chan error, 1)
	go func() { errc <- Key(context.Background(), tty, r, testLog(t)) }()
	write(t, master, " ")
	expect(t, r.ch, "press")
	master.Close()
	if err := <-errc; err != nil {
		t.Fatalf("Key after a hang-up: %v", err)
	}
	if got, want := r.events(), []string{"press", "release"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v (the held press released)", got, want)
	}
}

// With an input that is not a terminal Key returns nil at once (ctx never
// ends here), calls nothing and reads nothing.
func TestKeyNotATerminal(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	io.WriteString(pw, "  ")
	file, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()

	for _, in := range []*os.File{pr, file, devNull, nil} {
		var r recorder
		if err := Key(context.Background(), in, &r, testLog(t)); err != nil {
			t.Errorf("Key(%v): %v", in.Name(), err)
		}
		if got := r.events(); len(got) != 0 {
			t.Errorf("Key(%v) called the handler: %v", in.Name(), got)
		}
	}
	pw.Close()
	if rest, _ := io.ReadAll(pr); string(rest) != "  " {
		t.Errorf("Key read from a pipe: %q left of %q", rest, "  ")
	}
}

const keyChildEnv = "TRIGGER_TEST_KEY_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(keyChildEnv) {
	case "":
		os.Exit(m.Run())
	case "fg":
		keyChild()
	case "bg-parent":
		// Run a child in a process group of its own: a background job.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), keyChildEnv+"=bg")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Run(); err != nil {
			fmt.Println("background child:", err)
			os.Exit(1)
		}
	case "bg":
		fmt.Println("returned", Key(context.Background(), os.Stdin, printer{}, nil))
	}
}

// printer is a Handler that prints what it receives, one line each.
type printer struct{}

func (printer) Press()   { fmt.Println("press") }
func (printer) Release() { fmt.Println("release") }

// keyChild runs Key on its controlling terminal until SIGINT, as the daemon
// does.
func keyChild() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := Key(ctx, os.Stdin, printer{}, nil)
	fmt.Println("returned", err)
}

// Ctrl-C typed on the terminal reaches the process as SIGINT, which ends its
// ctx; Key then releases the held press and restores the terminal, and the
// process exits normally.
func TestKeyCtrlCReachesTheProcess(t *testing.T) {
	master, tty := openPTY(t)
	before := termios(t, tty)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), keyChildEnv+"=fg")
	cmd.Stdin = tty
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	next := func(want string) {
		t.Helper()
		if !lines.Scan() {
			cmd.Process.Kill()
			t.Fatalf("the child ended before printing %q: %v (%v)", want, lines.Err(), cmd.Wait())
		}
		if got := lines.Text(); got != want {
			t.Fatalf("the child printed %q, want %q", got, want)
		}
	}

	write(t, master, " ")
	next("press")
	write(t, master, "\x03") // Ctrl-C
	next("release")
	next("returned <nil>")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the child did not exit normally after Ctrl-C: %v", err)
	}
	if after := termios(t, tty); after != before {
		t.Errorf("terminal mode not restored:\nbefore %+v\nafter  %+v", before, after)
	}
}

// A background job of the terminal leaves it alone: changing its mode would
// stop the process with SIGTTOU. (If Key went on, the child would stop or
// wait for keys forever, and this test would hang.)
func TestKeyInABackgroundJobDoesNothing(t *testing.T) {
	_, tty := openPTY(t)
	before := termios(t, tty)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), keyChildEnv+"=bg-parent")
	cmd.Stdin = tty
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the background child: %v\n%s", err, out)
	}
	if got := string(out); got != "returned <nil>\n" {
		t.Errorf("the background child printed %q, want Key to return nil at once", got)
	}
	if after := termios(t, tty); after != before {
		t.Errorf("terminal mode changed:\nbefore %+v\nafter  %+v", before, after)
	}
}
