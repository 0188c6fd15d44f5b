package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile checks the image recipe `make image` builds: two stages,
// a static binary (no cgo) of this command, and a final stage without the
// toolchain that runs as a non-root user the binary it copied.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var stages [][]string // instructions per stage
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(strings.ToUpper(line), "FROM ") {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("instruction before FROM: %s", line)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], line)
	}
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, got %d stage(s)", len(stages))
	}
	build, final := strings.Join(stages[0], "\n"), stages[len(stages)-1]
	for _, want := range []string{"CGO_ENABLED=0", "go build", "./cmd/antidrift"} {
		if !strings.Contains(build, want) {
			t.Errorf("the build stage lacks %q", want)
		}
	}
	if strings.Contains(strings.ToLower(final[0]), "golang") {
		t.Errorf("the final stage carries the toolchain: %s", final[0])
	}
	var user, entry, copied string
	for _, ins := range final {
		switch f := strings.Fields(ins); strings.ToUpper(f[0]) {
		case "USER":
			user = f[1]
		case "ENTRYPOINT":
			entry = ins
		case "COPY":
			copied = f[len(f)-1]
		}
	}
	if user == "" || regexp.MustCompile(`^(0|root)(:|$)`).MatchString(user) {
		t.Errorf("the final stage runs as %q: want a non-root user", user)
	}
	if copied == "" || !strings.Contains(entry, copied) {
		t.Errorf("ENTRYPOINT %q does not run the copied binary %q", entry, copied)
	}
}
