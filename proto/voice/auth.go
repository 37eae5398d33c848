package voice

import (
	"bytes"
	"fmt"
	"strings"
)

// Param is one `##key:value` AUTH parameter (spec §6).
type Param struct {
	Key, Value string
}

// Auth is the payload of an AUTH frame: a token followed by parameters in order.
type Auth struct {
	Token  string
	Params []Param
}

// Get returns the value of the first parameter named key.
func (a Auth) Get(key string) (string, bool) {
	for _, p := range a.Params {
		if p.Key == key {
			return p.Value, true
		}
	}
	return "", false
}

// String shows the parameters and masks the token.
func (a Auth) String() string {
	var b strings.Builder
	b.WriteString("token=")
	if a.Token == "" {
		b.WriteString("(none)")
	} else {
		b.WriteString("****")
	}
	for _, p := range a.Params {
		fmt.Fprintf(&b, " %s=%q", p.Key, p.Value)
	}
	return b.String()
}

// Marshal returns the wire payload `token##key:value##key:value`. Keys may
// not contain ':' or "##" and values may not contain "##".
func (a Auth) Marshal() ([]byte, error) {
	if strings.Contains(a.Token, "##") {
		return nil, fmt.Errorf("voice: auth token contains \"##\", which the AUTH payload cannot carry")
	}
	b := []byte(a.Token)
	for _, p := range a.Params {
		if p.Key == "" || strings.ContainsAny(p.Key, ":") || strings.Contains(p.Key, "##") || strings.Contains(p.Value, "##") {
			return nil, fmt.Errorf("voice: auth parameter %q: keys need a name without ':' or \"##\", values cannot contain \"##\"", p.Key)
		}
		b = append(b, "##"...)
		b = append(b, p.Key...)
		b = append(b, ':')
		b = append(b, p.Value...)
	}
	return b, nil
}

// ParseAuth splits an AUTH payload. Each parameter splits on its first ':'.
func ParseAuth(p []byte) (Auth, error) {
	parts := bytes.Split(p, []byte("##"))
	a := Auth{Token: string(parts[0])}
	for _, kv := range parts[1:] {
		if len(kv) == 0 {
			continue
		}
		k, v, ok := bytes.Cut(kv, []byte(":"))
		if !ok || len(k) == 0 {
			return a, fmt.Errorf("voice: auth parameter %q is not key:value", kv)
		}
		a.Params = append(a.Params, Param{Key: string(k), Value: string(v)})
	}
	return a, nil
}
