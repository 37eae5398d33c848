package main

// End-to-end tests of where play_media may reach (issue 41): the real media
// plugin under the real plugin manager, called as the voice server, an MCP
// client, an unknown caller or the owner. Loopback servers play both sides:
// the "public" server the model names is allowed as exactly its address in
// plugins.network.allow (the owner's list, as the config loader reads it),
// and the "owner's network" is another loopback port, which is not.

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	hostconfig "github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/services"
)

// theModels are the callers that are not the owner.
var theModels = []services.Caller{services.CallerVoiceServer, services.CallerMCP, services.CallerUnknown}

// allowedPlugins is the plugins section with plugins.network.allow set to
// entries, as the real config loader reads it; base gives the rest.
func allowedPlugins(t testing.TB, base hostconfig.Plugins, entries ...string) hostconfig.Plugins {
	t.Helper()
	cfg, err := hostconfig.Load("", map[string]any{"plugins.network.allow": entries})
	if err != nil {
		t.Fatalf("plugins.network.allow %q: %v", entries, err)
	}
	p := cfg.Plugins
	p.Dirs, p.StateDir, p.Config = base.Dirs, base.StateDir, base.Config
	return p
}

// allowing sets plugins.network.allow for startHost.
func allowing(t testing.TB, entries ...string) func(*hostconfig.Plugins) {
	return func(p *hostconfig.Plugins) { *p = allowedPlugins(t, *p, entries...) }
}

// watched serves h on loopback and records the headers of every request.
func watched(t testing.TB, h http.Handler) (srv *httptest.Server, seen func() []http.Header) {
	var mu sync.Mutex
	var got []http.Header
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return append([]http.Header(nil), got...)
	}
}

func addr(srv *httptest.Server) string { return strings.TrimPrefix(srv.URL, "http://") }

// A page on the owner's network: a router's, the daemon's /metrics.
const (
	lanSecret = "api_key=SECRET-7f3a"
	lanPage   = lanSecret + "\nrouter_password=hunter2\nagenthost_up 1\n"
)

// TestAHopToAnAddressNotAllowedIsRefusedUntold:
// a public server's redirect or playlist entry that leads to the owner's
// network is refused at the dial for the model, and the page there is never
// fetched; for the owner, who may reach it, not a byte of its body comes back
// in the error or the log either.
func TestAHopToAnAddressNotAllowedIsRefusedUntold(t *testing.T) {
	lan, lanSeen := watched(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, lanPage)
	}))
	mux := http.NewServeMux()
	mux.HandleFunc("/x.m3u", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, lan.URL+"/metrics", http.StatusFound)
	})
	mux.HandleFunc("/x.mp3", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, lan.URL+"/metrics", http.StatusFound)
	})
	mux.HandleFunc("/entry.m3u", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "#EXTM3U\n%s/metrics.m3u\n", lan.URL)
	})
	mux.HandleFunc("/entry.pls", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "[playlist]\nFile1=%s/status.pls\n", lan.URL)
	})
	public, _ := watched(t, mux)
	h := startHost(t, map[string]any{}, allowing(t, addr(public)))
	urls := []string{public.URL + "/x.m3u", public.URL + "/x.mp3", public.URL + "/entry.m3u", public.URL + "/entry.pls"}
	for _, caller := range theModels {
		for _, u := range urls {
			o := h.callAs(caller, "play_media", map[string]any{"url": u})
			if o.Success || !strings.Contains(o.Error, "plugins.network.allow") {
				t.Errorf("%s: play_media %s: %+v, want it refused for an address the owner did not allow", caller, u, o)
			}
			if strings.Contains(o.Error, "SECRET") || strings.Contains(o.Error, "hunter2") {
				t.Errorf("%s: play_media %s told the page's body: %s", caller, u, o.Error)
			}
		}
	}
	if n := len(lanSeen()); n != 0 {
		t.Errorf("the page on the owner's network was fetched %d times for the model", n)
	}
	for _, u := range urls {
		if o := h.call("play_media", map[string]any{"url": u}); o.Success || strings.Contains(o.Error, "SECRET") || strings.Contains(o.Error, "hunter2") {
			t.Errorf("the owner's play_media %s: %+v, want an error without the page's body", u, o)
		}
	}
	if len(lanSeen()) == 0 {
		t.Errorf("the owner's play_media never reached the page on the owner's network")
	}
	if log := h.log.String(); strings.Contains(log, "SECRET") || strings.Contains(log, "hunter2") {
		t.Errorf("the host's log told the page's body:\n%s", log)
	}
	if n := len(h.out.Streams()); n != 0 {
		t.Errorf("%d streams opened", n)
	}
}

// TestALoopbackURLIsRefusedAlikeWhateverListensThere: the model's URLs to
// loopback (any spelling) get one answer whether the port is closed, answers
// 404 or serves a page, and nothing there is fetched: no port scanner.
func TestALoopbackURLIsRefusedAlikeWhateverListensThere(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	notFound, seen404 := watched(t, http.NotFoundHandler())
	page, seenPage := watched(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, lanPage)
	}))
	_, pagePort, _ := net.SplitHostPort(addr(page))
	h := startHost(t, map[string]any{})
	urls := []string{
		fmt.Sprintf("http://127.0.0.1:%d/x.mp3", closed),
		notFound.URL + "/x.mp3",
		page.URL + "/metrics",
		page.URL + "/x.m3u",
		"http://localhost:" + pagePort + "/metrics",
		"http://127.1.2.3:" + pagePort + "/metrics",
		"http://[::ffff:127.0.0.1]:" + pagePort + "/metrics",
		"http://[::1]:" + pagePort + "/metrics",
		"http://0.0.0.0:" + pagePort + "/metrics",
	}
	for _, caller := range theModels {
		var first string
		for _, u := range urls {
			o := h.callAs(caller, "play_media", map[string]any{"url": u})
			if o.Success {
				t.Errorf("%s: play_media %s played", caller, u)
				continue
			}
			answer := strings.ReplaceAll(o.Error, u, "URL")
			if first == "" {
				first = answer
				if !strings.Contains(answer, "plugins.network.allow") {
					t.Errorf("%s: play_media %s: %q, want it refused for an address the owner did not allow", caller, u, o.Error)
				}
			} else if answer != first {
				t.Errorf("%s: play_media %s answers %q, %s answered %q: the model can tell them apart", caller, u, o.Error, urls[0], first)
			}
		}
	}
	if n, m := len(seen404()), len(seenPage()); n+m != 0 {
		t.Errorf("loopback servers were fetched (%d, %d times) for the model", n, m)
	}
}

// TestAnHLSBodyCannotPlayALocalFile: a stream whose body is an HLS playlist
// naming file:/… (a private recording, outside dirs, which are empty) does
// not play, for anyone: the decoder of a network stream reads only its pipe.
func TestAnHLSBodyCannotPlayALocalFile(t *testing.T) {
	mp3, err := os.ReadFile(filepath.Join(material(t), "tone.mp3"))
	if err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(t.TempDir(), "recording.mp3")
	if err := os.WriteFile(private, mp3, 0o600); err != nil {
		t.Fatal(err)
	}
	hls, _ := watched(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		fmt.Fprintf(w, "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:3.0,\nfile:%s\n#EXT-X-ENDLIST\n", private)
	}))
	h := startHost(t, map[string]any{"dirs": []string{}}, allowing(t, addr(hls)))
	for _, caller := range []services.Caller{services.CallerVoiceServer, services.CallerOwner} {
		o := h.callAs(caller, "play_media", map[string]any{"url": hls.URL + "/live"})
		if o.Success {
			t.Errorf("%s: an HLS body naming %s played", caller, private)
			h.call("stop_media", map[string]any{})
		}
		if strings.Contains(o.Error, private) {
			t.Errorf("%s: the error names the body's entry: %s", caller, o.Error)
		}
	}
	if n := len(h.out.Streams()); n != 0 {
		t.Errorf("%d streams opened", n)
	}
}

// TestAPathOutsideTheFoldersIsAnsweredLikeAMissingOne: for the model, a
// path outside dirs (present or not, readable or not), a missing one inside
// and a folder get one answer, which does not name the configured folders.
func TestAPathOutsideTheFoldersIsAnsweredLikeAMissingOne(t *testing.T) {
	dir := material(t)
	other := t.TempDir()
	private := filepath.Join(other, "recording.mp3")
	if err := os.WriteFile(private, []byte("sound"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, map[string]any{"dirs": []string{dir}})
	for _, caller := range theModels {
		var first string
		for _, p := range []string{"/etc/shadow", "/etc/passwd", "/nonexistent/x.mp3", private,
			filepath.Join(other, "none.mp3"), filepath.Join(dir, "none.mp3"), other, "/etc"} {
			o := h.callAs(caller, "play_media", map[string]any{"url": p})
			if o.Success {
				t.Errorf("%s: play_media %s played", caller, p)
				continue
			}
			answer := strings.ReplaceAll(o.Error, p, "PATH")
			if strings.Contains(answer, dir) {
				t.Errorf("%s: play_media %s names the configured folder: %s", caller, p, o.Error)
			}
			if first == "" {
				first = answer
			} else if answer != first {
				t.Errorf("%s: play_media %s answers %q, /etc/shadow answered %q: the model learns which paths exist", caller, p, o.Error, first)
			}
		}
	}
}

// TestNoRefererReachesARedirectTarget: a station that redirects to a CDN
// elsewhere does not hand the CDN its URL (with its listen_key) in a
// Referer or any other header.
func TestNoRefererReachesARedirectTarget(t *testing.T) {
	cdn, cdnSeen := watched(t, http.FileServer(http.Dir(material(t))))
	station, _ := watched(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, cdn.URL+"/tone.mp3", http.StatusFound)
	}))
	h := startHost(t, map[string]any{}, allowing(t, addr(station), addr(cdn)))
	for _, caller := range []services.Caller{services.CallerVoiceServer, services.CallerOwner} {
		if o := h.callAs(caller, "play_media", map[string]any{"url": station.URL + "/live?listen_key=SECRET#frag"}); !o.Success {
			t.Fatalf("%s: play_media: %s", caller, o.Error)
		}
		h.call("stop_media", map[string]any{})
	}
	seen := cdnSeen()
	if len(seen) == 0 {
		t.Fatal("the CDN was never asked")
	}
	for _, hd := range seen {
		if ref := hd.Get("Referer"); ref != "" {
			t.Errorf("the CDN got Referer: %s", ref)
		}
		for k, vs := range hd {
			for _, v := range vs {
				if strings.Contains(v, "SECRET") || strings.Contains(v, addr(station)) {
					t.Errorf("the CDN got %s: %s, which names the station's URL", k, v)
				}
			}
		}
	}
}

// TestTheAllowListIsAppliedByAReload: a reload that adds an address to
// plugins.network.allow lets the model's next play_media reach it; one
// that takes it away refuses it again.
func TestTheAllowListIsAppliedByAReload(t *testing.T) {
	dir := material(t)
	srv := server(t, dir)
	var base hostconfig.Plugins
	h := startHost(t, map[string]any{}, func(p *hostconfig.Plugins) { base = *p })
	u := srv.URL + "/files/tone.mp3"
	if o := h.callAs(services.CallerVoiceServer, "play_media", map[string]any{"url": u}); o.Success || !strings.Contains(o.Error, "plugins.network.allow") {
		t.Fatalf("before the reload: %+v, want it refused", o)
	}
	h.m.Reconfigure(allowedPlugins(t, base, addr(srv)), nil)
	if o := h.callAs(services.CallerVoiceServer, "play_media", map[string]any{"url": u}); !o.Success {
		t.Fatalf("after a reload that allows %s: %s", addr(srv), o.Error)
	}
	h.mustCall("stop_media", map[string]any{})
	h.m.Reconfigure(allowedPlugins(t, base), nil)
	if o := h.callAs(services.CallerVoiceServer, "play_media", map[string]any{"url": u}); o.Success || !strings.Contains(o.Error, "plugins.network.allow") {
		t.Errorf("after a reload that took it away: %+v, want it refused", o)
	}
}
