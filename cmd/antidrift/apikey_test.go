package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoopbackURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"http://localhost:8000/v1", true},
		{"http://LOCALHOST/v1", true},
		{"http://127.0.0.1:11434/v1", true},
		{"http://127.8.9.10/v1", true},
		{"http://[::1]:8080/v1", true},
		{"https://api.openai.com/v1", false},
		{"http://10.0.0.5:8000/v1", false},
		{"http://localhost.example.com/v1", false},
		{"", false},
		{"not a url", false},
	} {
		assert.Equal(t, tc.want, loopbackURL(tc.url), tc.url)
	}
}

// No key for a server on this machine is no warning (the demo's sim-server,
// a local vLLM); for a remote endpoint it is.
func TestMissingKeyWarnsOnlyForRemoteEndpoints(t *testing.T) {
	t.Setenv("ANTIDRIFT_TEST_NO_KEY", "")
	for _, tc := range []struct {
		base string
		warn bool
	}{
		{"http://127.0.0.1:9999/v1", false},
		{"http://localhost:8000/v1", false},
		{"https://gateway.example.com/v1", true},
	} {
		var stderr bytes.Buffer
		key, err := apiKey(endpointFlags{baseURL: tc.base, apiKeyEnv: "ANTIDRIFT_TEST_NO_KEY"}, &stderr)
		require.NoError(t, err)
		assert.Empty(t, key)
		if tc.warn {
			assert.Contains(t, stderr.String(), "the variable is not set or empty", tc.base)
		} else {
			assert.Empty(t, stderr.String(), tc.base)
		}
	}
}
