package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// searchCache keeps the matching record positions of the last searches:
// paging through results or changing the sort does not read the files
// again. Results are cached once the first indexing pass is complete;
// records indexed since (a live run) are searched when next asked.
type searchCache struct {
	mu    sync.Mutex
	order []string
	hits  map[string]*searchHits
}

// searchHits are the matches among the first n records.
type searchHits struct {
	n    int
	hits map[int]bool
}

func newSearchCache() *searchCache { return &searchCache{hits: map[string]*searchHits{}} }

const searchCacheSize = 4

// search keeps the positions in sel whose messages contain text,
// case-insensitively. Files are read in parallel; the order of sel is kept.
func (ix *runIndex) search(recs []summary, sel []int, text string, cache *searchCache, complete bool) ([]int, error) {
	needle := strings.ToLower(text)
	cache.mu.Lock()
	prev, ok := cache.hits[needle]
	cache.mu.Unlock()
	var hits map[int]bool
	switch {
	case ok && prev.n >= len(recs):
		hits = prev.hits
	default:
		from := 0
		if ok {
			from = prev.n
		}
		more, err := ix.scan(recs, from, needle)
		if err != nil {
			return nil, err
		}
		hits = more
		if from > 0 {
			// The cached entry is shared with other readers: extend a copy.
			hits = make(map[int]bool, len(prev.hits)+len(more))
			for i := range prev.hits {
				hits[i] = true
			}
			for i := range more {
				hits[i] = true
			}
		}
		if complete {
			cache.mu.Lock()
			if _, had := cache.hits[needle]; !had {
				cache.order = append(cache.order, needle)
			}
			cache.hits[needle] = &searchHits{n: len(recs), hits: hits}
			if len(cache.order) > searchCacheSize {
				delete(cache.hits, cache.order[0])
				cache.order = cache.order[1:]
			}
			cache.mu.Unlock()
		}
	}
	out := sel[:0:0]
	for _, i := range sel {
		if hits[i] {
			out = append(out, i)
		}
	}
	return out, nil
}

// scan finds every record whose messages contain needle (lower case). The
// raw line is checked first where the needle cannot be JSON-escaped; the
// messages of the candidates are then decoded and checked exactly.
func (ix *runIndex) scan(recs []summary, from int, needle string) (map[int]bool, error) {
	files := ix.filesNow()
	workers := runtime.GOMAXPROCS(0)
	prefilter := jsonSafe(needle)
	nb := []byte(needle)
	type part struct {
		hits []int
		err  error
	}
	parts := make([]part, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			open := map[int32]*os.File{}
			defer func() {
				for _, f := range open {
					f.Close()
				}
			}()
			var buf, low []byte
			for i := from + w; i < len(recs); i += workers {
				s := &recs[i]
				name := files[s.file].path
				f := open[s.file]
				if f == nil {
					var err error
					if f, err = os.Open(name); err != nil {
						parts[w].err = err
						return
					}
					open[s.file] = f
				}
				if cap(buf) < int(s.n) {
					buf = make([]byte, s.n)
				}
				buf = buf[:s.n]
				if _, err := f.ReadAt(buf, s.off); err != nil {
					parts[w].err = fmt.Errorf("%s: %w", name, err)
					return
				}
				if prefilter && !lowerContains(buf, nb, &low) {
					continue
				}
				var m struct {
					Messages []trajectory.Message `json:"messages"`
				}
				if err := json.Unmarshal(buf, &m); err != nil {
					parts[w].err = fmt.Errorf("%s: %w", name, err)
					return
				}
				for _, msg := range m.Messages {
					if strings.Contains(strings.ToLower(messageText(msg)), needle) {
						parts[w].hits = append(parts[w].hits, i)
						break
					}
				}
			}
		}(w)
	}
	wg.Wait()
	hits := map[int]bool{}
	for _, p := range parts {
		if p.err != nil {
			return nil, p.err
		}
		for _, i := range p.hits {
			hits[i] = true
		}
	}
	return hits, nil
}

// lowerContains reports whether hay, lower-cased, contains needle (already
// lower-cased), reusing buf.
func lowerContains(hay []byte, needle []byte, buf *[]byte) bool {
	b := (*buf)[:0]
	for _, c := range hay {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	*buf = b
	return bytes.Contains(b, needle)
}

// jsonSafe reports whether s is written unescaped inside a JSON string by
// encoding/json, so that a raw-byte prefilter cannot miss it.
func jsonSafe(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029 {
			return false
		}
	}
	return true
}

// messageText is the searchable text of a message: its content, reasoning
// and tool calls' names and arguments.
func messageText(m trajectory.Message) string {
	var b strings.Builder
	b.WriteString(m.Content)
	for _, c := range m.ToolCalls {
		b.WriteByte('\n')
		b.WriteString(c.Function.Name)
		b.WriteByte(' ')
		b.WriteString(c.Function.Arguments)
	}
	return b.String()
}
