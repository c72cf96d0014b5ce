package persistence

import (
	"reflect"
	"testing"
)

func TestParseJSONArray(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []jsonItem
	}{
		{``, nil},
		{`null`, nil},
		{`{"a": 1}`, nil},
		{`[]`, nil},
		{`[34]`, []jsonItem{{num: 34, isNum: true}}},
		{` [ 1 , 3,2 ] `, []jsonItem{{num: 1, isNum: true}, {num: 3, isNum: true}, {num: 2, isNum: true}}},
		{`[-5]`, []jsonItem{{num: -5, isNum: true}}},
		{`["94105"]`, []jsonItem{{str: "94105"}}},
		{`["a,b \"c\"\nd", "日本語 🚀"]`, []jsonItem{{str: "a,b \"c\"\nd"}, {str: "日本語 🚀"}}},
		{`["\u00e9\/"]`, []jsonItem{{str: "é/"}}},
		{`[1.5, null, true]`, []jsonItem{{str: "1.5"}, {str: "true"}}},
		{`["unterminated`, nil},
		{`[[1], 2]`, []jsonItem{{str: "[1"}}}, // nested values are not part of the stored form
	} {
		got := parseJSONArray(nil, c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseJSONArray(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func FuzzParseJSONArray(f *testing.F) {
	for _, s := range []string{`[1, 2]`, `["a\"b"]`, `[`, `["`, `[1,,]`, `{"x":[1]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parseJSONArray(nil, s) // must terminate without panicking
	})
}

func TestAnswerFormatter(t *testing.T) {
	answers := answerTexts{}
	for code, a := range map[int32]struct {
		text string
		rank int32
	}{1: {"Smartphone", 2}, 2: {"Tablet", 1}, 3: {`Laptop, "pro"`, 3}} {
		answers[answerKey(110, code)] = a
	}
	var f answerFormatter
	multi := ResultColumn{QuestionID: 110, AnswerType: AnswerMulti, Kind: ColumnAnswer}
	text := ResultColumn{QuestionID: 45, AnswerType: AnswerText, Kind: ColumnAnswer}
	for _, c := range []struct {
		col       ResultColumn
		raw, want string
	}{
		{multi, `[3, 1, 2]`, `Tablet; Smartphone; Laptop, "pro"`},
		{multi, `[9]`, `9`},
		{multi, `["2"]`, `Tablet`},
		{multi, ``, ``},
		{multi, `[]`, ``},
		{text, `["94105"]`, `94105`},
		{text, `["a", 7]`, `a; 7`},
	} {
		if got := f.answer(answers, c.col, c.raw); got != c.want {
			t.Errorf("answer(%d, %s) = %q, want %q", c.col.QuestionID, c.raw, got, c.want)
		}
	}
	for raw, want := range map[string][2]string{
		`[29]`: {"25-34", "29"}, `[17]`: {"Under 18", "17"}, `[18]`: {"18-24", "18"}, `[64]`: {"55-64", "64"},
		`[65]`: {"65+", "65"}, `["41"]`: {"35-44", "41"}, `["x"]`: {"", "x"}, ``: {"", ""},
	} {
		if band, exact := f.age(raw); band != want[0] || exact != want[1] {
			t.Errorf("age(%s) = %q, %q, want %q", raw, band, exact, want)
		}
	}
}

func TestSpreadsheetText(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"plain":              "plain",
		"=1+1":               "'=1+1",
		"+cmd|' /C calc'!A0": "'+cmd|' /C calc'!A0",
		"@SUM(A1)":           "'@SUM(A1)",
		"-2+3":               "'-2+3",
		"\tx":                "'\tx",
		"\rx":                "'\rx",
		"-12.5000":           "-12.5000",
		"+3":                 "+3",
		"94105":              "94105",
		"a=b":                "a=b",
	} {
		if got := SpreadsheetText(in); got != want {
			t.Errorf("SpreadsheetText(%q) = %q, want %q", in, got, want)
		}
	}
}
