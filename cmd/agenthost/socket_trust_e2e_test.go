package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheCLISpeaksToNoImpostor: `agenthost say` with plugins.runtime_dir a
// folder of nobody's that any user may write to, where nobody listens on
// control.sock, refuses to speak and says why; the words never reach the
// impostor. As root (only root can give a folder to another user).
func TestTheCLISpeaksToNoImpostor(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root can give a folder to another user")
	}
	dir, err := os.MkdirTemp("", "imp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "control.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	heard, done := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 4096)
		n, _ := c.Read(b)
		heard <- string(b[:n])
	}()
	for _, p := range []string{sock, dir} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(testbinHost(t), "say", "--set", "plugins.runtime_dir="+dir, "the door code is 4711").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to speak to "+sock) || !strings.Contains(string(out), "0777") {
		t.Errorf("agenthost say to nobody's socket: %v\n%s", err, out)
	}
	ln.Close()
	<-done
	select {
	case s := <-heard:
		t.Errorf("the impostor heard: %q", s)
	default:
	}
}
