// Package urlmask masks the secrets a server's URL may carry (a password, a
// token as the user name, query values, a fragment) wherever the URL is
// shown: log lines, errors, `agenthost status` and `agenthost check`. It is
// the one mask for all of them.
package urlmask

import (
	"net/url"
	"strings"
)

// Mask replaces each secret part.
const Mask = "****"

// String returns raw with its password (or, without one, its user name: a
// token may ride there), every query value and its fragment replaced by
// Mask. The query's keys stay, to say what is set; a value without a key
// is masked whole. An unparsable URL is Mask.
func String(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Mask
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Mask)
		} else {
			u.User = url.User(Mask)
		}
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			if k, _, ok := strings.Cut(p, "="); ok {
				parts[i] = k + "=" + Mask
			} else if p != "" {
				parts[i] = Mask
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = Mask, ""
	}
	return u.String()
}

// Secrets returns the parts of raw that String masks, as written and as
// decoded, to find them in text that quotes the URL in another form (as
// net/http's errors do). Parts shorter than 4 characters are left out: they
// are no secrets, and masking them would mask common words.
func Secrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	add := func(vs ...string) {
		for _, v := range vs {
			if len(v) >= 4 {
				out = append(out, v)
			}
		}
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		} else {
			add(u.User.Username())
		}
	}
	for _, p := range strings.Split(u.RawQuery, "&") {
		_, v, ok := strings.Cut(p, "=")
		if !ok {
			v = p
		}
		add(v)
		if d, err := url.QueryUnescape(v); err == nil {
			add(d)
		}
	}
	add(u.Fragment, u.EscapedFragment())
	return out
}

// InText returns s, a name that may hold URLs (a stream named by its
// station's address), with each URL's query and fragment left out and its
// password (or lone user name) masked as by String; control characters
// are dropped.
func InText(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return strings.Map(printable, s)
	}
	start := strings.LastIndexAny(s[:i], " \t/:") + 1
	end := len(s)
	if j := strings.IndexAny(s[i:], " \t"); j >= 0 {
		end = i + j
	}
	masked := Mask
	if u, err := url.Parse(s[start:end]); err == nil {
		u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
		masked = String(u.String())
	}
	return strings.Map(printable, s[:start]) + masked + InText(s[end:])
}

func printable(r rune) rune {
	if r < ' ' || r == 0x7f {
		return -1
	}
	return r
}
