package replay

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// fastDecode decodes one journal line into w (zeroed by the caller) as
// json.Unmarshal would, for the lines this package writes: every key
// spelled as written and given once, values of the expected kinds,
// strings without surrogate escapes or invalid UTF-8. For anything else it
// reports false, leaving w in any state; the caller then zeroes w and uses
// json.Unmarshal, which decodes the line or says what is wrong with it.
// (Reflection was most of the cost of reading a journal; a fuzz target
// holds the two decoders equal.)
func fastDecode(b []byte, w *wireRecord) bool {
	d := fastDecoder{b: b}
	if !d.record(w) {
		return false
	}
	d.ws()
	return d.i == len(d.b)
}

// fastDecoder reads JSON from b at i. Every method reports false for input
// it does not take; the decode is then abandoned.
type fastDecoder struct {
	b     []byte
	i     int
	depth int
}

// seen guards against a key given twice (json.Unmarshal's merge rules are
// left to it).
type seen uint64

func (s *seen) first(bit uint) bool {
	if *s&(1<<bit) != 0 {
		return false
	}
	*s |= 1 << bit
	return true
}

func (d *fastDecoder) record(w *wireRecord) bool {
	var once seen
	return d.object(func(key string) bool {
		switch key {
		case "v":
			n, ok := d.uint(math.MaxInt)
			w.V = int(n)
			return once.first(0) && ok
		case "seq":
			n, ok := d.uint(math.MaxUint64)
			w.Seq = n
			return once.first(1) && ok
		case "t":
			return once.first(2) && d.time(&w.T)
		case "type":
			return once.first(3) && d.str(&w.Type)
		case "id":
			return once.first(4) && d.str(&w.ID)
		case "cwd":
			return once.first(5) && d.str(&w.Cwd)
		case "created":
			return once.first(6) && d.time(&w.Created)
		case "daemonVersion":
			return once.first(7) && d.str(&w.DaemonVersion)
		case "text":
			return once.first(8) && d.str(&w.Text)
		case "reasoning":
			return once.first(9) && d.str(&w.Reasoning)
		case "toolCalls":
			return once.first(10) && d.calls(&w.ToolCalls)
		case "name":
			return once.first(11) && d.str(&w.Name)
		case "args", "argsText", "argsBytes":
			return once.first(12) && d.args(key, &w.wireArgs)
		case "direct":
			return once.first(13) && d.boolean(&w.Direct)
		case "result":
			w.Result = new(wireResult)
			return once.first(14) && d.result(w.Result)
		case "subject":
			return once.first(15) && d.str(&w.Subject)
		case "verdict":
			return once.first(16) && d.str(&w.Verdict)
		case "outcome":
			return once.first(17) && d.str(&w.Outcome)
		case "reason":
			return once.first(18) && d.str(&w.Reason)
		case "stopReason":
			var s string
			ok := d.str(&s)
			w.StopReason = event.StopReason(s)
			return once.first(19) && ok
		case "key":
			return once.first(20) && d.str(&w.Key)
		case "value":
			return once.first(21) && d.raw(&w.Value)
		case "textZ":
			return once.first(22) && d.base64(&w.TextZ)
		case "pending":
			return once.first(23) && d.boolean(&w.Pending)
		}
		return false
	})
}

func (d *fastDecoder) calls(out *[]wireCall) bool {
	if !d.consume('[') {
		return false
	}
	*out = []wireCall{}
	if d.consume(']') {
		return true
	}
	for {
		var c wireCall
		var once seen
		ok := d.object(func(key string) bool {
			switch key {
			case "id":
				return once.first(0) && d.str(&c.ID)
			case "name":
				return once.first(1) && d.str(&c.Name)
			case "args", "argsText", "argsBytes":
				return once.first(2) && d.args(key, &c.wireArgs)
			}
			return false
		})
		if !ok {
			return false
		}
		*out = append(*out, c)
		if d.consume(',') {
			continue
		}
		return d.consume(']')
	}
}

// args reads one of the three spellings of arguments (only one may
// appear: json.Unmarshal would keep two).
func (d *fastDecoder) args(key string, a *wireArgs) bool {
	switch key {
	case "args":
		return d.raw(&a.Args)
	case "argsText":
		a.ArgsText = new(string)
		return d.str(a.ArgsText)
	}
	return d.base64(&a.ArgsBytes)
}

func (d *fastDecoder) result(r *wireResult) bool {
	var once seen
	return d.object(func(key string) bool {
		switch key {
		case "text":
			return once.first(0) && d.str(&r.Text)
		case "isError":
			return once.first(1) && d.boolean(&r.IsError)
		case "declined":
			return once.first(2) && d.str(&r.Declined)
		case "cardOutput":
			return once.first(3) && d.str(&r.CardOutput)
		case "cardOutputZ":
			return once.first(4) && d.base64(&r.CardOutputZ)
		case "task":
			r.Task = new(event.Task)
			return once.first(5) && d.task(r.Task)
		case "payload":
			return once.first(6) && d.raw(&r.Payload)
		case "exitCode":
			n, ok := d.int(math.MinInt, math.MaxInt)
			code := int(n)
			r.ExitCode = &code
			return once.first(7) && ok
		case "signal":
			return once.first(8) && d.str(&r.Signal)
		case "timedOut":
			return once.first(9) && d.boolean(&r.TimedOut)
		case "timeoutMs":
			n, ok := d.int(math.MinInt64, math.MaxInt64)
			r.TimeoutMs = n
			return once.first(10) && ok
		case "spillPath":
			return once.first(11) && d.str(&r.SpillPath)
		case "truncated":
			return once.first(12) && d.boolean(&r.Truncated)
		case "taskId":
			return once.first(13) && d.str(&r.TaskID)
		case "taskStatus":
			return once.first(14) && d.str(&r.TaskStatus)
		}
		return false
	})
}

func (d *fastDecoder) task(t *event.Task) bool {
	var once seen
	return d.object(func(key string) bool {
		switch key {
		case "id":
			return once.first(0) && d.str(&t.ID)
		case "status":
			return once.first(1) && d.str(&t.Status)
		}
		return false
	})
}

// object reads {"key": value, …}, calling field for each key with the
// decoder at its value. Keys must be plain (no escapes).
func (d *fastDecoder) object(field func(key string) bool) bool {
	if !d.consume('{') {
		return false
	}
	if d.consume('}') {
		return true
	}
	for {
		d.ws()
		key, ok := d.plainString()
		if !ok || !d.consume(':') {
			return false
		}
		d.ws()
		if !field(string(key)) {
			return false
		}
		if d.consume(',') {
			continue
		}
		return d.consume('}')
	}
}

func (d *fastDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) consume(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// plainString reads a string holding no escape and no byte outside
// printable ASCII, without copying it.
func (d *fastDecoder) plainString() ([]byte, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			s := d.b[d.i+1 : j]
			d.i = j + 1
			return s, true
		case c < 0x20 || c == '\\' || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string value: valid UTF-8, with any escape but a surrogate.
func (d *fastDecoder) str(out *string) bool {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return false
	}
	start := d.i + 1
	j := start
	ascii := true
	for ; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			break
		}
		if c == '\\' {
			return d.escapedString(out, start)
		}
		if c < 0x20 {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if j >= len(d.b) {
		return false
	}
	s := d.b[start:j]
	if !ascii && !utf8.Valid(s) {
		return false
	}
	*out = string(s)
	d.i = j + 1
	return true
}

// escapedString reads a string holding escapes, from its first byte at
// start (the first escape is at or after it).
func (d *fastDecoder) escapedString(out *string, start int) bool {
	var buf []byte
	j := start
	for j < len(d.b) {
		run := j // copy a run of plain bytes at once
		for j < len(d.b) && d.b[j] != '"' && d.b[j] != '\\' && d.b[j] >= 0x20 {
			j++
		}
		if buf == nil {
			buf = make([]byte, 0, 2*(j-start)+64)
		}
		buf = append(buf, d.b[run:j]...)
		if j >= len(d.b) {
			return false
		}
		c := d.b[j]
		switch {
		case c == '"':
			if !utf8.Valid(buf) {
				return false
			}
			*out = string(buf)
			d.i = j + 1
			return true
		case c < 0x20:
			return false
		}
		if j+1 >= len(d.b) {
			return false
		}
		switch e := d.b[j+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if j+6 > len(d.b) {
				return false
			}
			r, err := strconv.ParseUint(string(d.b[j+2:j+6]), 16, 32)
			if err != nil || (r >= 0xD800 && r < 0xE000) {
				return false // surrogates are left to encoding/json
			}
			buf = utf8.AppendRune(buf, rune(r))
			j += 6
			continue
		default:
			return false
		}
		j += 2
	}
	return false
}

// uint reads a non-negative integer of at most limit.
func (d *fastDecoder) uint(limit uint64) (uint64, bool) {
	j := d.i
	for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
		j++
	}
	digits := d.b[d.i:j]
	if len(digits) == 0 || (len(digits) > 1 && digits[0] == '0') || d.numberGoesOn(j) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil || n > limit {
		return 0, false
	}
	d.i = j
	return n, true
}

// int reads an integer within [lo, hi].
func (d *fastDecoder) int(lo, hi int64) (int64, bool) {
	j := d.i
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	k := j
	for k < len(d.b) && d.b[k] >= '0' && d.b[k] <= '9' {
		k++
	}
	if k == j || (k-j > 1 && d.b[j] == '0') || d.numberGoesOn(k) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(d.b[d.i:k]), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	d.i = k
	return n, true
}

// numberGoesOn reports a fraction or exponent at j (json.Unmarshal refuses
// those for an integer field; the fallback says so).
func (d *fastDecoder) numberGoesOn(j int) bool {
	return j < len(d.b) && (d.b[j] == '.' || d.b[j] == 'e' || d.b[j] == 'E')
}

func (d *fastDecoder) boolean(out *bool) bool {
	rest := d.b[d.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		*out, d.i = true, d.i+4
	case len(rest) >= 5 && string(rest[:5]) == "false":
		*out, d.i = false, d.i+5
	default:
		return false
	}
	return true
}

// time reads a time as time.Time's UnmarshalJSON does (which json.Unmarshal
// calls).
func (d *fastDecoder) time(t interface{ UnmarshalJSON([]byte) error }) bool {
	start := d.i
	var s string
	if !d.str(&s) {
		return false
	}
	return t.UnmarshalJSON(d.b[start:d.i]) == nil
}

// base64 reads a []byte as json.Unmarshal does: a standard base64 string.
func (d *fastDecoder) base64(out *[]byte) bool {
	var s string
	if !d.str(&s) {
		return false
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, []byte(s))
	*out = b[:n]
	return err == nil
}

// raw reads any JSON value but null (json.RawMessage keeps its bytes),
// validating it.
func (d *fastDecoder) raw(out *json.RawMessage) bool {
	start := d.i
	if d.i+4 <= len(d.b) && string(d.b[d.i:d.i+4]) == "null" {
		return false
	}
	if !d.skip() {
		return false
	}
	*out = append([]byte(nil), d.b[start:d.i]...)
	return true
}

// maxFastDepth bounds the nesting skip follows (encoding/json's own limit
// is far deeper; the fallback handles the rest).
const maxFastDepth = 100

// skip steps over one valid JSON value.
func (d *fastDecoder) skip() bool {
	if d.i >= len(d.b) {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '{' || c == '[':
		return d.skipContainer()
	case c == '"':
		return d.skipString()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.skipNumber()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if d.i+len(lit) <= len(d.b) && string(d.b[d.i:d.i+len(lit)]) == lit {
			d.i += len(lit)
			return true
		}
	}
	return false
}

func (d *fastDecoder) skipContainer() bool {
	if d.depth++; d.depth > maxFastDepth {
		return false
	}
	defer func() { d.depth-- }()
	closing := byte(']')
	isObject := d.b[d.i] == '{'
	if isObject {
		closing = '}'
	}
	d.i++
	if d.consume(closing) {
		return true
	}
	for {
		d.ws()
		if isObject {
			if !d.skipString() || !d.consume(':') {
				return false
			}
			d.ws()
		}
		if !d.skip() {
			return false
		}
		if d.consume(',') {
			continue
		}
		return d.consume(closing)
	}
}

// skipString steps over a string, checking its escapes and that it holds
// no control byte (as encoding/json's scanner does; it does not check
// UTF-8).
func (d *fastDecoder) skipString() bool {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return false
	}
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(d.b) {
				return false
			}
			switch d.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+6 > len(d.b) {
					return false
				}
				for _, h := range d.b[j+2 : j+6] {
					if !isHex(h) {
						return false
					}
				}
				j += 5
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// skipNumber steps over a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *fastDecoder) skipNumber() bool {
	j := d.i
	if d.b[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
		return j - k
	}
	switch {
	case j < len(d.b) && d.b[j] == '0':
		j++
	case digits() == 0:
		return false
	}
	if j < len(d.b) && d.b[j] == '.' {
		j++
		if digits() == 0 {
			return false
		}
	}
	if j < len(d.b) && (d.b[j] == 'e' || d.b[j] == 'E') {
		j++
		if j < len(d.b) && (d.b[j] == '+' || d.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return false
		}
	}
	d.i = j
	return true
}
