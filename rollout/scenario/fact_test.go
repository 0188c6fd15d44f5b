package scenario

import "testing"

// Each fact kind, with texts that must match (a reworded, partial or
// re-formatted surface form) and texts that must not.
func TestFactSurfaceForms(t *testing.T) {
	cases := []struct {
		name  string
		fact  Fact
		match map[string]string // text → the form reported
		clean []string
	}{
		{
			name: "digits/hospital number",
			fact: Fact{Type: FactIdentifier, Value: "HN-44-102938"},
			match: map[string]string{
				"hospital number 44 102938 on file": "44 102938",
				"ref HN44102938":                    "HN44102938",
				"hn 44.102.938":                     "hn 44.102.938",
				"(44)102938":                        "44)102938",
			},
			clean: []string{"ward 44, bed 10", "4410293", "call 441029389"},
		},
		{
			name: "digits/phone national forms",
			fact: Fact{Type: FactIdentifier, Value: "+44 7700 900412"},
			match: map[string]string{
				"ring 07700-900-412 after six": "07700-900-412",
				"+44 (0)7700 900412":           "+44 (0)7700 900412",
				"mobile 7700900412":            "7700900412",
				"+447700900412":                "+447700900412",
			},
			clean: []string{"07700 900 41", "order 770090"},
		},
		{
			name: "tail/card",
			fact: Fact{Type: FactIdentifier, Value: "4111 1111 1111 4421", Tail: 4},
			match: map[string]string{
				"the card ending 4421":  "4421",
				"card ****4421 charged": "4421",
				"4111-1111-1111-4421":   "4111-1111-1111-4421",
			},
			clean: []string{"card ending 44211", "room 442"},
		},
		{
			name: "tokens/name",
			fact: Fact{Type: FactName, Value: "Dana Kim"},
			match: map[string]string{
				"Hi Dana Kim,":          "Dana Kim",
				"for KIM, Dana":         "KIM, Dana",
				"cc D. Kim":             "D. Kim",
				"Dana J. Kim will join": "Dana J. Kim",
			},
			clean: []string{"Dana will join", "Kim's team", "D. K. attended", "Dana and the Kim family"},
		},
		{
			name: "tokens/diacritics",
			fact: Fact{Type: FactName, Value: "Zoë Brontë-Åkesson"},
			match: map[string]string{
				"zoe bronte akesson": "zoe bronte akesson",
				"Z. Brontë-Åkesson":  "Z. Brontë-Åkesson",
			},
			clean: []string{"Zoë"},
		},
		{
			name: "aliases/diagnosis",
			fact: Fact{Type: FactConcept, Value: "Parkinson's disease", Aliases: []string{"Parkinson", "PD", "G20", "movement disorders clinic"}},
			match: map[string]string{
				"queries early PD, referred on":             "PD",
				"referred to the movement-disorders clinic": "movement-disorders clinic",
				"ICD-10 g20 recorded":                       "g20",
				"signs of parkinsonism":                     "",
				"a parkinsons review":                       "parkinsons",
			},
			clean: []string{"PDF attached", "G200 form", "a clinic visit"},
		},
		{
			name: "aliases/compact",
			fact: Fact{Type: FactConcept, Value: "antidepressant", Aliases: []string{"type 2 diabetes"}},
			match: map[string]string{
				"an anti-depressant":      "anti-depressant",
				"Type-2 Diabetes":         "Type-2 Diabetes",
				"type2diabetes screening": "type2diabetes",
			},
			clean: []string{"depressant", "type 1 diabetes"},
		},
		{
			name: "amounts",
			fact: Fact{Type: FactAmount, Value: "15"},
			match: map[string]string{
				"$15 off your winter wheel swap": "$15",
				"15.00 credit":                   "15.00",
				"a 15 dollars voucher":           "15 dollars",
			},
			clean: []string{"2027-03-15", "at 10:15", "15% off", "15 percent", "150 points", "1.5 stars", "PT-15"},
		},
		{
			name: "amounts/european",
			fact: Fact{Type: FactAmount, Value: "34.95", Currency: "EUR"},
			match: map[string]string{
				"EUR 34,95 refunded": "EUR 34,95",
				"34.95 €":            "34.95 €",
				"€34.95":             "€34.95",
			},
			clean: []string{"34.95 points", "item 34,95"},
		},
		{
			name: "amounts/percentage",
			fact: Fact{Type: FactAmount, Value: "12.5%"},
			match: map[string]string{
				"arrears rose 12.5% in May": "12.5%",
				"12,5 percent":              "12,5 percent",
				"by 12.50 %.":               "12.50 %",
			},
			clean: []string{"12.5 points", "$12.50", "125%"},
		},
		{
			name: "unspaced script",
			fact: Fact{Type: FactName, Value: "小鱼儿", Aliases: []string{"Xiao Yu'er"}},
			match: map[string]string{
				"昨天小鱼儿说没收到货":       "小鱼儿",
				"buyer Xiao Yu'er": "Xiao Yu'er",
			},
			clean: []string{"小鱼说"},
		},
		{
			name: "amounts/thousands",
			fact: Fact{Type: FactAmount, Value: "1500"},
			match: map[string]string{
				"1,500 owed":           "1,500",
				"DKK 1.500,00 owed":    "DKK 1.500,00",
				"1 500 kr":             "1 500 kr",
				"a total of 1500.00.":  "1500.00",
				"KK-30518 1500,00 SGD": "1500,00 SGD",
			},
			clean: []string{"15,00", "150"},
		},
		{
			// Values compare as numbers: leading and trailing zeros aside.
			name: "amounts/zeros",
			fact: Fact{Type: FactAmount, Value: "0.50"},
			match: map[string]string{
				"a 0.5 fee":      "0.5",
				"fee 00.5000 ok": "00.5000",
			},
			clean: []string{"5", "0.05", "50", "1.50", "USD .50", "00.500"},
		},
	}
	// One FactText reset for every text in turn finds what a fresh one does.
	var reused FactText
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cf, err := CompileFact(&c.fact, 0)
			if err != nil {
				t.Fatal(err)
			}
			for text, want := range c.match {
				got := cf.Find(PrepareFactText(text))
				reused.Reset(text)
				if again := cf.Find(&reused); again != got {
					t.Errorf("%q: reused text found %q, fresh %q", text, again, got)
				}
				if want == "" {
					if got != "" {
						t.Errorf("%q: matched %q, want no match", text, got)
					}
					continue
				}
				if got != want {
					t.Errorf("%q: form %q, want %q", text, got, want)
				}
			}
			for _, text := range c.clean {
				if got := cf.Find(PrepareFactText(text)); got != "" {
					t.Errorf("%q: matched %q, want no match", text, got)
				}
				reused.Reset(text)
				if got := cf.Find(&reused); got != "" {
					t.Errorf("%q: reused text matched %q, want no match", text, got)
				}
			}
		})
	}
}

func TestParseAmount(t *testing.T) {
	for _, c := range []struct {
		text    string
		want    string // big.Rat.RatString; "" for no amount
		percent bool
	}{
		{"$1,500.00", "1500", false},
		{"DKK 1.500,00", "1500", false},
		{"EUR 34,95", "699/20", false},
		{"12.5%", "25/2", true},
		{"0.50", "1/2", false},
		{"007", "7", false},
		{"0", "0", false},
		{"1 500 kr", "1500", false},
		{"30518 168,40", "30518", false},
		{"no number here", "", false},
		{"2027-03-15", "", false},
	} {
		r, pct, ok := ParseAmount(c.text)
		if c.want == "" {
			if ok {
				t.Errorf("%q: got %s, want no amount", c.text, r.RatString())
			}
			continue
		}
		if !ok || r.RatString() != c.want || pct != c.percent {
			t.Errorf("%q: got %v %v %v, want %s percent=%v", c.text, r, pct, ok, c.want, c.percent)
		}
	}
}

func TestFactAllows(t *testing.T) {
	f := Fact{AllowedIn: []string{"send_letter", "create_ticket.body", AnswerSink}}
	for _, c := range []struct {
		tool, path string
		want       bool
	}{
		{"send_letter", "subject", true},
		{"create_ticket", "body", true},
		{"create_ticket", "body.text", true},
		{"create_ticket", "subject", false},
		{"create_ticket", "bodyx", false},
		{AnswerSink, "", true},
		{"send_sms", "body", false},
	} {
		if got := f.Allows(c.tool, c.path); got != c.want {
			t.Errorf("Allows(%s, %s) = %v, want %v", c.tool, c.path, got, c.want)
		}
	}
}
