package household

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Key is a household's secret: the AES-128-GCM key that memberlist seals
// every packet of the household with. A speaker without it neither joins
// nor is heard.
type Key [16]byte

// KeyFolder is the key's folder in the state folder.
const KeyFolder = "household"

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

var codec = base32.NewEncoding(alphabet).WithPadding(base32.NoPadding)

// NewKey makes a household's key.
func NewKey() (Key, error) {
	var k Key
	_, err := rand.Read(k[:])
	return k, err
}

// Code is the key as the owner reads it off one speaker and types into
// another: 28 letters and digits in groups of four. The first 26 are the
// key; the 27th is a Luhn mod 32 check, which catches every one-letter
// typo and most swaps of two neighbours; the 28th is a letter of the key's
// hash, which catches most of what is left.
func (k Key) Code() string {
	body := codec.EncodeToString(k[:])
	s := body + string(alphabet[luhnCheck(body)]) + string(alphabet[hashLetter(k)])
	var groups []string
	for len(s) > 4 {
		groups, s = append(groups, s[:4]), s[4:]
	}
	return strings.Join(append(groups, s), "-")
}

// luhnCheck is the Luhn mod N check of s (N = 32): the value that makes the
// weighted sum of s and it a multiple of 32.
func luhnCheck(s string) int {
	sum, factor := 0, 2
	for i := len(s) - 1; i >= 0; i-- {
		v := factor * strings.IndexByte(alphabet, s[i])
		sum += v/32 + v%32
		factor = 3 - factor
	}
	return (32 - sum%32) % 32
}

func hashLetter(k Key) int {
	sum := sha256.Sum256(k[:])
	return int(sum[0] % 32)
}

// ID names the household without telling its key (status, discovery).
func (k Key) ID() string {
	sum := sha256.Sum256(append([]byte("agenthost household id "), k[:]...))
	return hex.EncodeToString(sum[:4])
}

// ParseCode reads a code as Code writes it, in either case, with or
// without its dashes and spaces.
func ParseCode(code string) (Key, error) {
	s := strings.ToUpper(strings.NewReplacer("-", "", " ", "", "\n", "").Replace(code))
	for _, c := range s {
		if !strings.ContainsRune(alphabet, c) {
			return Key{}, fmt.Errorf("%q is not a household code: %q is none of its letters (A–Z and 2–7); read it again off `agenthost household code` on a speaker of the household", code, c)
		}
	}
	if len(s) != 28 {
		return Key{}, fmt.Errorf("a household code has 28 letters and digits (7 groups of 4); %q has %d", code, len(s))
	}
	typo := errors.New("that household code has a typo (its check does not match); read it again off `agenthost household code`")
	body := s[:26]
	if alphabet[luhnCheck(body)] != s[26] {
		return Key{}, typo
	}
	b, err := codec.DecodeString(body)
	// The bits past the key's 128 must be zero: no two spellings read as
	// one key.
	if err != nil || len(b) != len(Key{}) || codec.EncodeToString(b) != body {
		return Key{}, typo
	}
	var k Key
	copy(k[:], b)
	if alphabet[hashLetter(k)] != s[27] {
		return Key{}, typo
	}
	return k, nil
}

// KeyPath is where the key is kept under the state folder.
func KeyPath(stateDir string) string { return filepath.Join(stateDir, KeyFolder, "key") }

// LoadKey reads the key in stateDir: ok false when the speaker is in no
// household. A key others may read is refused: anyone who has it is a
// member.
func LoadKey(stateDir string) (k Key, ok bool, err error) {
	p := KeyPath(stateDir)
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return Key{}, false, nil
	}
	if err != nil {
		return Key{}, false, err
	}
	if !fi.Mode().IsRegular() {
		return Key{}, false, fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return Key{}, false, fmt.Errorf("%s may be read by others (mode %v): whoever reads it is a member of the household; chmod 600 it", p, fi.Mode().Perm())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return Key{}, false, err
	}
	k, err = ParseCode(string(bytes.TrimSpace(b)))
	if err != nil {
		return Key{}, false, fmt.Errorf("%s: %w", p, err)
	}
	return k, true, nil
}

// SaveKey keeps k in stateDir, readable by its owner only, replacing a key
// there.
func SaveKey(stateDir string, k Key) error {
	dir := filepath.Join(stateDir, KeyFolder)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(k.Code() + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), KeyPath(stateDir))
}

// RemoveKey takes the speaker out of its household.
func RemoveKey(stateDir string) error {
	err := os.Remove(KeyPath(stateDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
