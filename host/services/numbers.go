package services

import (
	"bytes"
	"fmt"

	"github.com/agenthost/agenthost/internal/clip"
)

// Bounds of a number in a call's params. The schema validator parses each
// number as a big one, in time that grows with the square of its digits
// (seconds for a million) or with its exponent (1e999999 is computed, and
// a mebibyte of 1e9999 takes 17 s), so params are checked against these
// first. A float64 needs 24 characters and an exponent of 3 digits.
const (
	MaxNumberLength = 64
	maxExponent     = 3 // digits, as a float64's
)

// checkNumbers says what is wrong with the first number in raw (JSON) that
// breaks the bounds, or returns "". It reads raw once, skipping strings,
// and needs no valid JSON (the parser says what else is wrong).
func checkNumbers(raw []byte) string {
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '-' || c >= '0' && c <= '9':
			j := i
			for j < len(raw) && isNumberByte(raw[j]) {
				j++
			}
			if msg := checkNumber(raw[i:j]); msg != "" {
				return msg
			}
			i = j - 1
		}
	}
	return ""
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// checkNumber checks one number literal against the bounds.
func checkNumber(lit []byte) string {
	if len(lit) > MaxNumberLength {
		return fmt.Sprintf("a number of %d characters (%s), over the bound of %d characters for a number in call parameters",
			len(lit), clip.String(string(lit[:64]), 24), MaxNumberLength)
	}
	if i := bytes.IndexAny(lit, "eE"); i >= 0 {
		exp := bytes.TrimLeft(bytes.TrimLeft(lit[i+1:], "+-"), "0")
		if len(exp) > maxExponent {
			return fmt.Sprintf("the number %s has an exponent of more than %d digits, over the bound for a number in call parameters", lit, maxExponent)
		}
	}
	return ""
}
