// Package wirejson appends JSON for the hot paths of the wire (live card
// output, replayed cards) byte for byte as encoding/json writes it with
// HTML escaping off, without reflection or intermediate buffers.
//
// # Known limits
//
// It covers strings and the Appender hook only; anything else is left to
// encoding/json by its callers.
package wirejson

import "unicode/utf8"

// Appender is a value that appends its own JSON encoding to b (the bytes
// encoding/json would write for it, with HTML escaping off).
type Appender interface {
	AppendJSON(b []byte) []byte
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string exactly as encoding/json writes
// it without HTML escaping: short escapes for \b \f \n \r \t, \u00XX for
// other control bytes, \ufffd for each invalid byte, and \u2028 and \u2029
// escaped.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
