package scenario

import (
	"math/big"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Amounts in free text: a number in any common notation ("15", "15.00",
// "1,500", "1.500,00", "1 500", "34,95"), with a currency marker beside it
// or not, or a percentage ("12.5%", "12,5 percent"). Numbers inside dates,
// times, ranges and identifiers ("2027-03-15", "10:15", "PT-40117") are
// not amounts; a percentage matches only a percentage fact.

// amountAt is one amount found in a text.
type amountAt struct {
	value    decimal
	text     string // as written, with its currency marker
	currency bool   // a currency marker stands beside it
	percent  bool   // a % sign or "percent" follows it
}

// ParseAmount reads the first amount of a text ("$15", "EUR 34,95", "15",
// "12.5%"); percent says it is a percentage.
func ParseAmount(s string) (value *big.Rat, percent bool, ok bool) {
	as := PrepareFactText(s).amounts()
	if len(as) == 0 {
		return nil, false, false
	}
	return as[0].value.rat(), as[0].percent, true
}

// decimal is a non-negative decimal number in canonical form: its integer
// digits without leading zeros and its fraction digits without trailing
// zeros, so that two are equal exactly when their values are. Both are
// slices of the text they were read from: comparing amounts allocates
// nothing.
type decimal struct{ intPart, frac string }

func newDecimal(intPart, frac string) decimal {
	return decimal{strings.TrimLeft(intPart, "0"), strings.TrimRight(frac, "0")}
}

// rat is the decimal's value.
func (d decimal) rat() *big.Rat {
	num := d.intPart
	if num == "" {
		num = "0"
	}
	if d.frac != "" {
		num += "." + d.frac
	}
	r, _ := new(big.Rat).SetString(num) // digits only: it parses
	return r
}

var currencySymbols = []string{"us$", "s$", "hk$", "a$", "c$", "$", "€", "£", "¥", "₹", "￥"}

var currencyWords = map[string]bool{
	"usd": true, "eur": true, "gbp": true, "dkk": true, "sek": true, "nok": true, "chf": true,
	"sgd": true, "hkd": true, "cny": true, "rmb": true, "jpy": true, "aud": true, "cad": true,
	"inr": true, "kr": true, "rs": true, "dollar": true, "dollars": true, "euro": true, "euros": true,
	"pound": true, "pounds": true, "krone": true, "kroner": true, "kronor": true, "yuan": true,
	"yen": true, "rupees": true, "francs": true,
}

// amounts finds every amount of the text, once.
func (t *FactText) amounts() []amountAt {
	if t.amtDone {
		return t.amts
	}
	t.amtDone = true
	s := t.folded
	for i := 0; i < len(s); {
		if !isDigit(s[i]) || (i > 0 && (isDigit(s[i-1]) || isWordByte(s, i-1))) {
			i++
			continue
		}
		end, intPart, frac := scanNumber(s, i)
		if a, ok := t.amountFrom(i, end, intPart, frac); ok {
			t.amts = append(t.amts, a)
		}
		i = end
	}
	return t.amts
}

func (t *FactText) amountFrom(start, end int, intPart, frac string) (amountAt, bool) {
	s := t.folded
	// Part of a date, a time, a range of digits or an identifier.
	if start > 0 {
		if p := s[start-1]; (p == '-' || p == '/' || p == ':' || p == '.' || p == ',') && start > 1 && (isDigit(s[start-2]) || isWordByte(s, start-2)) {
			return amountAt{}, false
		}
	}
	percent := false
	if end < len(s) {
		n := s[end]
		if isWordByte(s, end) {
			return amountAt{}, false
		}
		percent = n == '%' || strings.HasPrefix(s[end:], " %")
		if (n == '-' || n == '/' || n == ':') && end+1 < len(s) && isDigit(s[end+1]) {
			return amountAt{}, false
		}
	}
	next := nextWord(s, end)
	percent = percent || next == "percent" || next == "pct"
	a := amountAt{value: newDecimal(intPart, frac), percent: percent}
	from, to := start, end
	if percent {
		to := end + len(s[end:]) - len(strings.TrimLeft(s[end:], " "))
		if strings.HasPrefix(s[to:], "%") {
			to++
		} else {
			to += len(next)
		}
		a.text = t.orig(start, to)
		return a, true
	}
	before := strings.TrimRight(s[:start], " ")
	for _, sym := range currencySymbols {
		if strings.HasSuffix(before, sym) {
			a.currency, from = true, len(before)-len(sym)
			break
		}
	}
	if !a.currency {
		if w, at := prevWord(s, start); currencyWords[w] {
			a.currency, from = true, at
		}
	}
	if !a.currency {
		if strings.HasPrefix(strings.TrimLeft(s[end:], " "), "€") || currencyWords[next] {
			a.currency = true
			to = end + len(s[end:]) - len(strings.TrimLeft(s[end:], " "))
			if currencyWords[next] {
				to += len(next)
			} else {
				to += len("€")
			}
		}
	}
	a.text = t.orig(from, to)
	return a, true
}

// scanNumber reads a number from s[i] on: digit groups joined by thousands
// separators, then an optional decimal part. A separator followed by
// exactly three digits (and then no digit) is a thousands separator unless
// it is the last separator and a different one came before it ("1.500,00"),
// or the only one and a comma or a point before one or two digits
// ("34,95", "15.5").
func scanNumber(s string, i int) (end int, intPart, frac string) {
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	// The groups and separators are read in place: the first group is
	// s[i:firstEnd], the last s[lastStart:j].
	firstEnd, lastStart := j, i
	var firstSep, lastSep byte
	seps := 0
	// Thousands groups follow a lead of at most three digits: "30518
	// 168,40" is two numbers, "1500.000" a decimal.
	lead := firstEnd-i <= 3
	for j < len(s) {
		sep := s[j]
		if sep != ',' && sep != '.' && sep != ' ' && sep != '\'' {
			break
		}
		k := j + 1
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		n := k - (j + 1)
		if n == 0 {
			break
		}
		if sep == ' ' || sep == '\'' {
			if n != 3 || !lead || (seps > 0 && lastSep != sep) {
				break
			}
		}
		if !lead {
			return k, s[i:firstEnd], s[j+1 : k]
		}
		if seps == 0 {
			firstSep = sep
		}
		lastSep, lastStart = sep, j+1
		seps++
		j = k
		if n != 3 {
			break // a decimal part ends the number
		}
	}
	end = j
	if seps == 0 {
		return end, s[i:firstEnd], ""
	}
	lastGroup := s[lastStart:end]
	decimal := false
	switch {
	case lastSep == ' ' || lastSep == '\'':
	case len(lastGroup) != 3:
		decimal = true
	case seps > 1 && firstSep != lastSep:
		decimal = true
	}
	if decimal {
		return end, digitsOnly(s[i : lastStart-1]), lastGroup
	}
	return end, digitsOnly(s[i:end]), ""
}

// digitsOnly is s without its separators (s itself when it has none).
func digitsOnly(s string) string {
	for k := 0; k < len(s); k++ {
		if !isDigit(s[k]) {
			return digitsOf(s)
		}
	}
	return s
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// isWordByte reports whether the rune at or ending at byte i is a letter.
func isWordByte(s string, i int) bool {
	if s[i] < utf8.RuneSelf {
		return unicode.IsLetter(rune(s[i]))
	}
	start := i
	for start > 0 && !utf8.RuneStart(s[start]) {
		start--
	}
	r, _ := utf8.DecodeRuneInString(s[start:])
	return unicode.IsLetter(r)
}

// nextWord is the letters after s[i:] and any spaces.
func nextWord(s string, i int) string {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	j := i
	for j < len(s) && s[j] < utf8.RuneSelf && unicode.IsLetter(rune(s[j])) {
		j++
	}
	return s[i:j]
}

// prevWord is the letters before s[:i] and any spaces, and where they start.
func prevWord(s string, i int) (string, int) {
	for i > 0 && s[i-1] == ' ' {
		i--
	}
	j := i
	for j > 0 && s[j-1] < utf8.RuneSelf && unicode.IsLetter(rune(s[j-1])) {
		j--
	}
	return s[j:i], j
}
