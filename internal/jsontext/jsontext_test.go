package jsontext

import (
	"encoding/json"
	"testing"
)

func TestAppendJSONEscaped(t *testing.T) {
	for _, s := range []string{"plain", `q"uote\back`, "ctl\x01\n\t\r", "é ü 日本", "bad\xffutf8", "\u2028\u2029", ""} {
		got := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q encodes as invalid JSON %s: %v", s, got, err)
		}
		want, _ := json.Marshal(s)
		var w string
		_ = json.Unmarshal(want, &w)
		if back != w {
			t.Fatalf("%q round-trips as %q, want %q", s, back, w)
		}
	}
}
