package faketelegram

//lint:file-ignore ST1005 these are Telegram's error texts, quoted verbatim

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Telegram's HTML parse mode (https://core.telegram.org/bots/api#html-style):
// only these tags are accepted; anything else, an unclosed or crossed tag is
// rejected with 400 "Bad Request: can't parse entities: …". The messages below
// follow the wording of the real server.
var supportedTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "span": true, "tg-spoiler": true,
	"a": true, "code": true, "pre": true, "blockquote": true, "tg-emoji": true,
}

// parseHTML validates s as Telegram HTML and returns the text a user would see.
// The error text is the part after "can't parse entities: ".
func parseHTML(s string) (string, error) {
	var out strings.Builder
	var stack []string
	i := 0
	for i < len(s) {
		c := s[i]
		switch c {
		case '&':
			r, n := decodeEntity(s[i:])
			if n == 0 {
				out.WriteByte('&')
				i++
				continue
			}
			out.WriteRune(r)
			i += n
		case '<':
			start := i
			i++
			if i < len(s) && s[i] == '/' {
				i++
				name, n := readName(s[i:])
				i += n
				for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
					i++
				}
				if i >= len(s) || s[i] != '>' {
					return "", fmt.Errorf("Unclosed end tag at byte offset %d", start)
				}
				i++
				if len(stack) == 0 {
					return "", fmt.Errorf("Unexpected end tag at byte offset %d", start)
				}
				top := stack[len(stack)-1]
				if !strings.EqualFold(name, top) {
					return "", fmt.Errorf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", start, top, name)
				}
				stack = stack[:len(stack)-1]
				continue
			}
			name, n := readName(s[i:])
			if n == 0 {
				return "", fmt.Errorf("Unexpected end of name token at byte offset %d", start)
			}
			i += n
			lname := strings.ToLower(name)
			if !supportedTags[lname] {
				return "", fmt.Errorf("Unsupported start tag \"%s\" at byte offset %d", name, start)
			}
			attrs, n, err := readAttrs(s[i:], start)
			if err != nil {
				return "", err
			}
			i += n
			if lname == "span" && attrs["class"] != "tg-spoiler" {
				return "", fmt.Errorf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", start)
			}
			stack = append(stack, lname)
		default:
			out.WriteByte(c)
			i++
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("Can't find end tag corresponding to start tag \"%s\"", stack[len(stack)-1])
	}
	return out.String(), nil
}

func readName(s string) (string, int) {
	n := 0
	for n < len(s) {
		c := s[n]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			n++
			continue
		}
		break
	}
	return s[:n], n
}

// readAttrs reads `name="v" name='v' name=v name` up to and including '>'.
func readAttrs(s string, tagStart int) (map[string]string, int, error) {
	attrs := map[string]string{}
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		if i >= len(s) {
			return nil, 0, fmt.Errorf("Unclosed start tag at byte offset %d", tagStart)
		}
		if s[i] == '>' {
			return attrs, i + 1, nil
		}
		name, n := readName(s[i:])
		if n == 0 {
			return nil, 0, fmt.Errorf("Unexpected character at byte offset %d", tagStart+1+i)
		}
		i += n
		if i < len(s) && s[i] == '=' {
			i++
			if i >= len(s) {
				return nil, 0, fmt.Errorf("Unclosed start tag at byte offset %d", tagStart)
			}
			var val string
			if q := s[i]; q == '"' || q == '\'' {
				end := strings.IndexByte(s[i+1:], q)
				if end < 0 {
					return nil, 0, fmt.Errorf("Unclosed start tag at byte offset %d", tagStart)
				}
				val = s[i+1 : i+1+end]
				i += end + 2
			} else {
				j := i
				for j < len(s) && s[j] != ' ' && s[j] != '>' {
					j++
				}
				val = s[i:j]
				i = j
			}
			attrs[strings.ToLower(name)] = val
		} else {
			attrs[strings.ToLower(name)] = ""
		}
	}
}

// decodeEntity decodes one of the entities Telegram supports (&lt; &gt; &amp;
// &quot; and numeric ones) at the start of s; n is 0 when s does not start with one.
func decodeEntity(s string) (rune, int) {
	end := strings.IndexByte(s, ';')
	if end < 2 || end > 12 {
		return 0, 0
	}
	body := s[1:end]
	switch body {
	case "lt":
		return '<', end + 1
	case "gt":
		return '>', end + 1
	case "amp":
		return '&', end + 1
	case "quot":
		return '"', end + 1
	}
	if body[0] == '#' {
		var v uint64
		var err error
		if len(body) > 1 && (body[1] == 'x' || body[1] == 'X') {
			v, err = strconv.ParseUint(body[2:], 16, 32)
		} else {
			v, err = strconv.ParseUint(body[1:], 10, 32)
		}
		if err == nil && v > 0 && v <= 0x10FFFF {
			return rune(v), end + 1
		}
	}
	return 0, 0
}

// utf16Len is the length of s in UTF-16 code units, the unit of Telegram's
// length limits and entity offsets.
func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }
