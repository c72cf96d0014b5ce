package engine

import (
	"slices"
	"strings"
	"testing"
)

// A snapshot's packed copy of a condition yields the normalized texts of the original, in
// order, whatever their lengths and bytes, and leaves the caller's campaign as it was.
func TestOwnCampaignPacksTexts(t *testing.T) {
	texts := []string{"10001", "", " Paris ", strings.Repeat("é", 200), "a\\x00b", "99501"}
	c := Campaign{ID: 1, Quotas: []Quota{{ID: 1, Conditions: []Condition{
		{QuestionID: 45, Texts: texts},
		{QuestionID: 43, Codes: []int32{30, 31}},
	}}}}
	orig := slices.Clone(texts)
	ownValue := ownCampaign(&c)
	own := &ownValue
	if &own.Quotas[0] == &c.Quotas[0] {
		t.Fatal("the quotas of a campaign with texts were not copied")
	}
	if !slices.Equal(c.Quotas[0].Conditions[0].Texts, orig) || c.Quotas[0].Conditions[0].packed != "" {
		t.Fatalf("the caller's campaign changed: %+v", c.Quotas[0].Conditions[0])
	}
	cond := &own.Quotas[0].Conditions[0]
	if cond.Texts != nil || !cond.hasTexts() {
		t.Fatalf("not packed: %+v", cond)
	}
	var want []string
	for _, s := range orig {
		want = append(want, NormalizeText(s))
	}
	if got := slices.Collect(cond.textValues()); !slices.Equal(got, want) {
		t.Errorf("packed texts %q, want %q", got, want)
	}
	if back := unpackedCampaign(own); !slices.Equal(back.Quotas[0].Conditions[0].Texts, want) || back.Quotas[0].Conditions[0].packed != "" {
		t.Errorf("unpacked %+v, want texts %q", back.Quotas[0].Conditions[0], want)
	}
	if own.Quotas[0].Conditions[1].hasTexts() {
		t.Error("a condition without texts has some")
	}
	plain := Campaign{ID: 2, Quotas: []Quota{{ID: 2, Conditions: []Condition{{QuestionID: 43, Codes: []int32{1}}}}}}
	if p := ownCampaign(&plain); &p.Quotas[0] != &plain.Quotas[0] {
		t.Error("the quotas of a campaign without texts were copied")
	}
}

// A condition a feed packs from raw bytes reads as the same condition with Texts, is held
// as it is by the snapshot's copy.
func TestPackTexts(t *testing.T) {
	texts := []string{"10001", "", " paris ", strings.Repeat("é", 200), "99501"}
	var raw [][]byte
	for _, s := range texts {
		raw = append(raw, []byte(s))
	}
	var cond Condition
	cond.PackTexts(raw)
	raw[0][0] = 'X' // the read buffer is reused for the next row
	var want []string
	for _, s := range texts {
		want = append(want, NormalizeText(s))
	}
	if got := slices.Collect(cond.textValues()); cond.Texts != nil || !slices.Equal(got, want) {
		t.Fatalf("packed %q (Texts %q), want %q", got, cond.Texts, want)
	}
	c := Campaign{ID: 1, Quotas: []Quota{{ID: 1, Conditions: []Condition{cond}}}}
	if own := ownCampaign(&c); own.Quotas[0].Conditions[0].packed != cond.packed {
		t.Error("the snapshot's copy changed a packed condition")
	}
	cond.PackTexts(nil)
	if cond.hasTexts() {
		t.Error("packing no texts left some")
	}
}

// textCount counts the values textValues yields, packed or not (the build sizes its
// postings by it), an empty value and a 200-character one included.
func TestConditionTextCount(t *testing.T) {
	for _, texts := range [][]string{nil, {""}, {"10001", "", strings.Repeat("é", 200), "99501"}} {
		raw := make([][]byte, len(texts))
		for i, s := range texts {
			raw[i] = []byte(s)
		}
		var packed Condition
		packed.PackTexts(raw)
		for _, c := range []Condition{{Texts: texts}, packed} {
			n := 0
			for range c.textValues() {
				n++
			}
			if got := c.textCount(); got != len(texts) || got != n {
				t.Errorf("texts %q (packed %t): textCount %d, textValues %d, want %d", texts, c.packed != "", got, n, len(texts))
			}
		}
	}
}
