package trajectory

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// ErrContent is returned by ContentText for a content that is neither a
// string, null, nor a list of parts.
var ErrContent = errors.New("want a string, null or a list of text parts")

// ContentText is an OpenAI message content as text: a string as it is,
// null or absent as "", and a list of content parts as its text parts
// joined in order (other parts, such as images, dropped). Servers send any
// of the three, and traces from other agents keep them.
func ContentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", err
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" || p.Type == "" {
				b.WriteString(p.Text)
			}
		}
		return b.String(), nil
	}
	return "", ErrContent
}
