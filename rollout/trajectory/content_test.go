package trajectory

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestContentText(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string
		err  bool
	}{
		{``, "", false},
		{`null`, "", false},
		{` "hi" `, "hi", false},
		{`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"text":"b"}]`, "ab", false},
		{`[]`, "", false},
		{`42`, "", true},
		{`{"text":"x"}`, "", true},
		{`[{"type":"text","text":1}]`, "", true},
	} {
		got, err := ContentText(json.RawMessage(tc.raw))
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ContentText(%s) = %q, %v; want %q, error %v", tc.raw, got, err, tc.want, tc.err)
		}
		if tc.raw == `42` && !errors.Is(err, ErrContent) {
			t.Errorf("a number: %v, want ErrContent", err)
		}
	}
}
