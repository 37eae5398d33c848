// Package part is what the daemon is made of: a Part runs beside the link
// until its context ends; a part may also take its slice of a reloaded
// configuration (Reloader) and say whether it makes progress (Checker).
// Start runs parts in order, one place.
package part

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/config"
)

// Part is a part of the daemon that runs beside the link: the plugin
// manager, the control socket, the conversation. Run calls ready once the
// part is ready, then blocks until ctx ends.
type Part interface {
	Name() string
	Run(ctx context.Context, ready func()) error
}

// Changes are the keys of the configuration a reload changed
// (config.Changed), diffed once for every part.
type Changes []string

// Touched reports whether any changed key is one of prefixes or below one.
func (c Changes) Touched(prefixes ...string) bool {
	for _, key := range c {
		for _, p := range prefixes {
			if key == p || strings.HasPrefix(key, p+".") {
				return true
			}
		}
	}
	return false
}

// Reloader is a part that applies its own slice of a new configuration.
// Reload is called once per reload, in the composition's order, even when
// nothing changed (a part that could not run may try again).
type Reloader interface {
	Reload(prev, next *config.Config, changed Changes)
}

// Checker is a part of the daemon that can get stuck. Check returns nil,
// before ctx ends, while it makes progress.
type Checker interface {
	Check(ctx context.Context) error
}

// CheckFunc is a Checker.
type CheckFunc func(ctx context.Context) error

// Check implements Checker.
func (f CheckFunc) Check(ctx context.Context) error { return f(ctx) }

// Func runs run as a part that is ready at once.
func Func(name string, run func(ctx context.Context) error) Part { return funcPart{name, run} }

type funcPart struct {
	name string
	run  func(ctx context.Context) error
}

func (c funcPart) Name() string { return c.name }

func (c funcPart) Run(ctx context.Context, ready func()) error {
	ready()
	if err := c.run(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// Start starts each part in order on runCtx, waiting until it is ready,
// unless ctx (the stop signal) ends first. Errors of parts that fail later
// arrive on errc, which must hold one per part.
func Start(ctx, runCtx context.Context, parts []Part, wg *sync.WaitGroup, errc chan error) error {
	for _, c := range parts {
		ready := make(chan struct{})
		var once sync.Once
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(runCtx, func() { once.Do(func() { close(ready) }) }); err != nil {
				errc <- fmt.Errorf("%s: %w", c.Name(), err)
				return
			}
			once.Do(func() { close(ready) }) // ended cleanly without saying ready
		}()
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-ready:
			select { // a part may fail right after saying ready
			case err := <-errc:
				return err
			default:
			}
		}
	}
	return nil
}

// Live is a Reloader that names the settings it applies without a restart
// (a changed key counts when it is one of these or below one); a reload
// names every other changed setting as waiting for a restart.
type Live interface {
	Live() []string
}

// Settings is a Reloader of the settings Keys, which Apply applies live.
type Settings struct {
	Keys  []string
	Apply func(prev, next *config.Config, changed Changes)
}

// Reload implements Reloader.
func (s Settings) Reload(prev, next *config.Config, changed Changes) { s.Apply(prev, next, changed) }

// Live implements Live.
func (s Settings) Live() []string { return s.Keys }

// Differ is a Reloader whose input is more than the YAML (a file it names):
// Diff says which keys changed outside it, before any part reloads.
type Differ interface {
	Diff(next *config.Config) Changes
}

// Waiting is a Live part some of whose live settings wait for a restart in
// a given reload (the wake word turned on or off): Waiting names those of
// changed that this reload cannot apply, before any part reloads; the
// reload counts them with the settings that wait.
type Waiting interface {
	Waiting(prev, next *config.Config, changed Changes) []string
}
