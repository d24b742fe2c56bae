package dnsdiscovery

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ParseTXT reads the strings of a DNS-SD TXT record (RFC 6763 section 6) into a map: each
// string is key=value (the value may hold '=' too) or a bare key (value ""); keys are compared
// case-insensitively, so they are kept in lower case; the first occurrence of a key wins and
// later ones are ignored, as are empty strings and strings starting with '='. Keys must be
// printable US-ASCII; values, which DNS-SD allows to be any bytes, must be UTF-8 here, as
// Terraform strings are.
func ParseTXT(txt []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range txt {
		if s == "" || s[0] == '=' {
			continue
		}
		key, value, _ := strings.Cut(s, "=")
		for _, r := range []byte(key) {
			if r < 0x20 || r > 0x7e {
				return nil, fmt.Errorf("the key of %q is not printable US-ASCII (RFC 6763 section 6.4): rename it", s)
			}
		}
		key = strings.ToLower(key)
		if _, dup := out[key]; dup {
			continue
		}
		if !utf8.ValidString(value) {
			return nil, fmt.Errorf("the value of key %q is not UTF-8 text: publish it as text (e.g. base64)", key)
		}
		out[key] = value
	}
	return out, nil
}
