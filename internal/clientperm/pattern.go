package clientperm

import (
	"fmt"
	"strings"
)

// Pattern matches source or receiver names, token by token, as NATS
// subjects are matched: a name's tokens are its parts between dots; a
// pattern token "*" matches any one token, a last token ">" matches one
// or more tokens (the rest of the name), any other token only itself.
// So "orders.*" matches "orders.eu" but not "orders" or "orders.eu.1";
// "orders.>" matches both of the latter; ">" alone matches every name.
type Pattern struct {
	text   string
	tokens []string
}

// ParsePattern parses text as a Pattern. It refuses an empty pattern, an
// empty token ("a..b", a leading or trailing dot), a ">" that is not the
// last token, and a token that mixes "*" or ">" with other characters
// ("ord*"): such a pattern would not mean what it seems to.
func ParsePattern(text string) (Pattern, error) {
	if text == "" {
		return Pattern{}, fmt.Errorf("empty pattern: give a name, or use * (one token) or > (the rest of the name)")
	}
	tokens := strings.Split(text, ".")
	for i, tok := range tokens {
		switch {
		case tok == "":
			return Pattern{}, fmt.Errorf("pattern %q has an empty token: tokens are the parts between dots, each at least one character", text)
		case tok == ">" && i != len(tokens)-1:
			return Pattern{}, fmt.Errorf("pattern %q has > before its last token: > matches the rest of a name, so it comes last", text)
		case tok != "*" && tok != ">" && strings.ContainsAny(tok, "*>"):
			return Pattern{}, fmt.Errorf("pattern %q has token %q mixing * or > with other characters: * and > match whole tokens only (write orders.* rather than orders*)", text, tok)
		}
	}
	return Pattern{text: text, tokens: tokens}, nil
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.text }

// Match reports whether name matches p.
func (p Pattern) Match(name string) bool {
	parts := strings.Split(name, ".")
	for i, tok := range p.tokens {
		switch {
		case tok == ">":
			return len(parts) > i && strings.Join(parts[i:], ".") != ""
		case i >= len(parts):
			return false
		case tok == "*":
			if parts[i] == "" {
				return false
			}
		case tok != parts[i]:
			return false
		}
	}
	return len(parts) == len(p.tokens)
}

// ParsePatterns parses each of texts, naming the first bad one.
func ParsePatterns(texts []string) ([]Pattern, error) {
	out := make([]Pattern, 0, len(texts))
	for _, t := range texts {
		p, err := ParsePattern(t)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// anyMatch reports whether name matches one of ps.
func anyMatch(ps []Pattern, name string) bool {
	for _, p := range ps {
		if p.Match(name) {
			return true
		}
	}
	return false
}

// join lists ps for messages ("none" when empty).
func join(ps []Pattern) string {
	if len(ps) == 0 {
		return "none"
	}
	texts := make([]string, len(ps))
	for i, p := range ps {
		texts[i] = p.text
	}
	return strings.Join(texts, ", ")
}
