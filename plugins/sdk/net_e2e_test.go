package sdk_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// TestHTTPClientReachesWhatTheCallerMay: a plugin's sdk.HTTPClient, in the
// real test plugin, reaches a loopback server for the owner and for a call
// whose list names it, and for no other call, not even by a redirect from
// an allowed server; a redirect target gets no Referer.
func TestHTTPClientReachesWhatTheCallerMay(t *testing.T) {
	var mu sdkMutex
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.note(r.Header.Get("Referer"))
	}))
	defer target.Close()
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/after", http.StatusFound)
	}))
	defer allowed.Close()
	p := startTest(t)
	fetch := func(info pluginv1.CallInfo, url string) (string, error) {
		data, err := p.Call(pluginv1.WithCallInfo(context.Background(), info), "fetch", []byte(`{"url":"`+url+`"}`))
		return string(data), err
	}
	voice := pluginv1.CallInfo{Caller: pluginv1.Caller_CALLER_VOICE_SERVER}
	listed := pluginv1.CallInfo{Caller: pluginv1.Caller_CALLER_VOICE_SERVER, NetworkAllow: []string{strings.TrimPrefix(target.URL, "http://")}}
	only := pluginv1.CallInfo{Caller: pluginv1.Caller_CALLER_MCP_CLIENT, NetworkAllow: []string{strings.TrimPrefix(allowed.URL, "http://")}}
	for _, c := range []struct {
		info pluginv1.CallInfo
		url  string
		want string
	}{
		{pluginv1.CallInfo{Caller: pluginv1.Caller_CALLER_OWNER}, target.URL, `"the owner got 200"`},
		{listed, target.URL, `"the voice server got 200"`},
		{voice, target.URL, "the voice server may not reach it"},
		{pluginv1.CallInfo{}, target.URL, "an unknown caller may not reach it"},
		{only, allowed.URL, "an MCP client may not reach it"},
		{pluginv1.CallInfo{Caller: pluginv1.Caller_CALLER_OWNER}, allowed.URL + "/?listen_key=SECRET", `"the owner got 200"`},
	} {
		got, err := fetch(c.info, c.url)
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%v fetching %s: %s, want %s", c.info, c.url, got, c.want)
		}
	}
	if refs := mu.seen(); len(refs) != 3 || strings.Join(refs, "") != "" {
		t.Errorf("the target was asked with the Referers %q, want 3 requests without one", refs)
	}
}

type sdkMutex struct {
	mu   sync.Mutex
	refs []string
}

func (m *sdkMutex) note(ref string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refs = append(m.refs, ref)
}

func (m *sdkMutex) seen() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.refs...)
}
