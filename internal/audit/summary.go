package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxStringChars is the longest string value an argument summary keeps whole.
const MaxStringChars = 200

// Redacted replaces the value of a secret-looking key.
const Redacted = "[redacted]"

const (
	maxDepth = 4
	maxItems = 20
	maxKeys  = 50
)

// SummarizeArguments turns a tool call's JSON arguments into what the audit log
// keeps: every key with its value, strings longer than MaxStringChars truncated to
// "<prefix>…(N chars)", values of secret-looking keys (token, key, secret, password,
// authorization, cookie, session, jwt, ssn, card_number, cvv, iban, …; see
// IsSecretKey) replaced by Redacted at any depth, deep or long structures
// shortened. Arguments that are not a JSON object are summarised under the key
// "_invalid".
func SummarizeArguments(raw json.RawMessage) map[string]any {
	out := map[string]any{}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		out["_invalid"] = truncate(fmt.Sprintf("not JSON (%d bytes): %v", len(raw), err))
		return out
	}
	obj, ok := v.(map[string]any)
	if !ok {
		out["_invalid"] = fmt.Sprintf("arguments are a JSON %s, not an object", jsonType(v))
		return out
	}
	n := 0
	for k, val := range obj {
		if n == maxKeys {
			out["…"] = fmt.Sprintf("(%d keys)", len(obj))
			break
		}
		n++
		out[truncate(k)] = summarize(k, val, 1)
	}
	return out
}

func summarize(key string, v any, depth int) any {
	if IsSecretKey(key) {
		return Redacted
	}
	switch t := v.(type) {
	case string:
		return truncate(t)
	case map[string]any:
		if depth >= maxDepth {
			return fmt.Sprintf("…(object with %d keys)", len(t))
		}
		m := make(map[string]any, len(t))
		n := 0
		for k, val := range t {
			if n == maxKeys {
				m["…"] = fmt.Sprintf("(%d keys)", len(t))
				break
			}
			n++
			m[truncate(k)] = summarize(k, val, depth+1)
		}
		return m
	case []any:
		if depth >= maxDepth {
			return fmt.Sprintf("…(array of %d items)", len(t))
		}
		n := min(len(t), maxItems)
		s := make([]any, 0, n+1)
		for _, val := range t[:n] {
			s = append(s, summarize("", val, depth+1))
		}
		if len(t) > maxItems {
			s = append(s, fmt.Sprintf("…(%d items)", len(t)))
		}
		return s
	default:
		return v
	}
}

func truncate(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= MaxStringChars {
		return s
	}
	i := 0
	for range MaxStringChars {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return fmt.Sprintf("%s…(%d chars)", s[:i], n)
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// secretSubstrings mark a key as secret wherever they occur in it, once it is
// lowercased and stripped of everything but letters and digits (so "card_number",
// "Card-Number" and "cardNumber" all contain "cardnumber").
var secretSubstrings = []string{"token", "secret", "password", "passwd", "passphrase", "credential", "cookie", "apikey", "privatekey", "bearer", "signature",
	"authorization", "jwt", "cvv", "cardnumber", "creditcard", "ccnumber", "securitycode", "socialsecurity", "sessionid"}

// secretWords mark a key as secret when they are a whole word of it
// (words split at '_', '-', '.', spaces and camelCase boundaries): too short or
// too common to match inside other words ("ssn" is in "bossname").
var secretWords = map[string]bool{"key": true, "keys": true, "auth": true, "authorization": true, "authentication": true, "pwd": true, "pin": true, "otp": true,
	"session": true, "sid": true, "ssn": true, "cvc": true, "iban": true, "pan": true}

// IsSecretKey reports whether an argument key looks like it holds a secret.
func IsSecretKey(key string) bool {
	if key == "" {
		return false
	}
	lower := strings.ToLower(key)
	squashed := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, lower)
	for _, s := range secretSubstrings {
		if strings.Contains(squashed, s) {
			return true
		}
	}
	for _, w := range splitWords(key) {
		if secretWords[w] {
			return true
		}
	}
	return false
}

func splitWords(key string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range key {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return words
}
