// Package sandbox confines the processes the daemon starts (plugins, MCP
// stdio servers, event hooks, the wake-word detector, and what they start in
// turn): a child may read the system but not the daemon's own files (its
// state, configuration, token and runtime folder), and may write only the
// folders it is given. The kernel holds the line, so a door forgotten in
// code stays closed.
//
// Two mechanisms hold it. Landlock, the kernel's unprivileged sandbox, where
// the kernel has it: Confine turns an *exec.Cmd into one that starts this
// very binary (/proc/self/exe) as a small trampoline, which applies the
// policy to its own thread and execs the real program, which keeps the
// Landlock domain for its whole life and hands it to everything it starts.
// Where the kernel has no Landlock (the Raspberry Pi OS kernel), user
// namespaces through bubblewrap (namespaces.go).
//
// Where neither can, Confine fails (closed): the owner must fix the kernel
// or set sandbox.mode: none in the config.
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// Policy is what one child may touch beyond reading the system.
type Policy struct {
	// Hide lists files and folders the child may neither read nor write:
	// the daemon's own. Defaults are always hidden (see Defaults).
	Hide []string `json:"hide,omitempty"`
	// Read lists what the child may read and execute even inside a hidden
	// folder (the detector's models, a plugin binary).
	Read []string `json:"read,omitempty"`
	// Write lists the folders the child may read, write, create and remove
	// in (its own state and runtime folders, what the owner granted).
	Write []string `json:"write,omitempty"`
	// Devices lets the child write to device files under /dev and /sys
	// (an event hook that drives an LED); every child may write /dev/null.
	Devices bool `json:"devices,omitempty"`
	// Everywhere lets the child write wherever its user may, except the
	// hidden files: the owner's own event hooks, which keep the reach of
	// any script of theirs but not the daemon's files.
	Everywhere bool `json:"everywhere,omitempty"`
}

// Defaults are the daemon's files in a packaged install, hidden from every
// child whatever the configuration says.
var Defaults = []string{
	"/etc/agenthost", "/etc/credstore", "/etc/credstore.encrypted",
	"/run/credentials", "/run/agenthost", "/var/lib/agenthost", "/var/cache/agenthost",
}

// With returns p with more entries (which may be empty).
func (p Policy) With(q Policy) Policy {
	return Policy{
		Hide:       append(slices.Clone(p.Hide), q.Hide...),
		Read:       append(slices.Clone(p.Read), q.Read...),
		Write:      append(slices.Clone(p.Write), q.Write...),
		Devices:    p.Devices || q.Devices,
		Everywhere: p.Everywhere || q.Everywhere,
	}
}

// Mode says whether children are confined.
type Mode string

const (
	// Auto confines every child with Landlock where the kernel has it, else
	// in user namespaces; where neither can, none is started.
	Auto Mode = "auto"
	// Landlock confines every child with Landlock; a kernel without it
	// refuses to start them.
	Landlock Mode = "landlock"
	// Namespaces confines every child in user namespaces (bubblewrap).
	Namespaces Mode = "namespaces"
	// None runs children with the daemon's own rights: an owner's explicit,
	// logged choice.
	None Mode = "none"
)

// Modes are the values a Mode may take.
var Modes = []Mode{Auto, Landlock, Namespaces, None}

const (
	trampoline = "agenthost-sandbox" // argv[0] of the trampoline
	envPolicy  = "AGENTHOST_SANDBOX_POLICY"
)

// ErrUnsupported means the kernel cannot confine children.
var ErrUnsupported = errors.New("the kernel has no Landlock")

// Confine confines cmd by p alone with the mechanism Auto picks (see
// Jail.Confine).
func Confine(cmd *exec.Cmd, p Policy) error { return Jail{}.Confine(cmd, p) }

// Jail is the daemon's sandbox: its mode and the files of its own that
// every child is kept from. The zero Jail is Auto with Defaults only.
type Jail struct {
	Mode Mode
	Base Policy
}

// Mechanism is how children are confined under mode m: Landlock,
// Namespaces or None; an error (ErrUnsupported) when they cannot be.
func Mechanism(m Mode) (Mode, error) {
	switch m {
	case None:
		return None, nil
	case Landlock:
		_, err := ABI()
		return Landlock, err
	case Namespaces:
		if _, err := findBwrap(); err != nil {
			return Namespaces, fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
		return Namespaces, nil
	}
	_, lerr := ABI()
	if lerr == nil {
		return Landlock, nil
	}
	if _, err := findBwrap(); err != nil {
		return Auto, fmt.Errorf("%w; nor can children run in user namespaces: %v", lerr, err)
	}
	return Namespaces, nil
}

// Confine rewrites cmd (before it starts) so that the program it names
// runs under the jail's base policy and p. Relative paths are made
// absolute; a Write folder that does not exist is created (0700). It
// fails, and cmd must not be started, when the mode's mechanism is not
// available; with Mode None it leaves cmd as it is.
func (j Jail) Confine(cmd *exec.Cmd, p Policy) error {
	if j.Mode == None || cmd.Err != nil {
		return nil // cmd.Err: Start reports it (a program not found), and runs nothing
	}
	mech, err := Mechanism(j.Mode)
	if err != nil {
		return err
	}
	p = j.Base.With(p)
	for _, dir := range p.Write {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("the sandbox's folder: %w", err)
		}
	}
	abs := func(list []string) []string {
		out := make([]string, 0, len(list))
		for _, s := range list {
			if s == "" {
				continue
			}
			if a, err := filepath.Abs(s); err == nil {
				s = a
			}
			out = append(out, s)
		}
		return out
	}
	p = Policy{Hide: abs(append(slices.Clone(Defaults), p.Hide...)), Read: abs(p.Read), Write: abs(p.Write), Devices: p.Devices, Everywhere: p.Everywhere}
	if mech == Namespaces {
		return confineNamespaces(cmd, p)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(slices.Clone(cmd.Env), envPolicy+"="+string(b))
	cmd.Args = append([]string{trampoline, cmd.Path}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
	return nil
}
