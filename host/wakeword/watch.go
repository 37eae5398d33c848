package wakeword

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/agenthost/agenthost/host/supervise"
)

// watch tries a detector that is off (parked after crashing, or broken at
// start) again when its binary changes: touched, or installed again (a
// rename over it, a copy onto it), as the supervisor's log tells the owner.
// It watches the binary's folder, as the plugin folders are watched, until
// ctx ends. A running detector is left alone.
func (d *Detector) watch(ctx context.Context) {
	dir, name := filepath.Dir(d.o.Command), filepath.Base(d.o.Command)
	w, err := fsnotify.NewWatcher()
	if err == nil {
		if err = w.Add(dir); err != nil {
			w.Close()
		}
	}
	if err != nil {
		d.log.Warn("cannot watch the detector's folder; after installing it again, reload the daemon (systemctl reload agenthost) to retry it",
			"dir", dir, "err", err)
		<-ctx.Done()
		return
	}
	defer w.Close()
	due := make(chan struct{}, 1)
	settle := time.AfterFunc(time.Hour, func() {
		select {
		case due <- struct{}{}:
		default:
		}
	})
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if filepath.Base(ev.Name) == name && !ev.Has(fsnotify.Remove) && !ev.Has(fsnotify.Rename) {
				settle.Reset(d.o.WatchSettle) // a copy writes many times: wait for it to end
			}
		case <-due:
			if st := d.sup.Status().State; st == supervise.StateParked || st == supervise.StateBroken {
				d.log.Info("the detector's binary changed; starting it again", "path", d.o.Command, "was", st)
				d.load()
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			d.log.Warn("detector folder watch error", "err", err)
		}
	}
}
