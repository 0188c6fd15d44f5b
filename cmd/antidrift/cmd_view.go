package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/antidrift/antidrift/cmd/antidrift/internal/view"
	"github.com/antidrift/antidrift/rollout/labels"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
)

func init() { register(newViewCmd) }

// viewPollInterval is how often the viewer looks for records appended to
// the runs it serves.
const viewPollInterval = 500 * time.Millisecond

type viewFlags struct {
	addr      string
	scenarios []string
	labeling  string
	allowHost []string
	export    string
	filter    []string
	limit     int
}

func newViewCmd() *cobra.Command {
	var f viewFlags
	cmd := &cobra.Command{
		Use:   "view PATH...",
		Short: "Read trajectories, drift marks, judge views and pairs in the browser",
		Long: `Serve a local web app over run folders, dataset exports (pairs, KTO, rewards,
trajectories; their .jsonl tables) and Pareto report folders. A folder that
holds run folders (a demo output, a rescore folder) contributes each of them.

The trajectory list filters by checkpoint, framework, scenario, domain,
status, success, drift type, violation kind and provision, searches message
text, sorts and pages on the server, and shows TSR/DR/CSR of the current
filter. A trajectory shows its conversation with each drifting call marked
(type, kind, provisions, annotated or derived), the lure that preceded it,
the scenario's boundary and success checks, the judge's verdict and what the
judge saw; a pair shows what both sides share once, then each side from
where they diverge with the differing words marked. Dataset tables filter,
search and sort like the list; a run still being written is followed live.

The viewer only reads: nothing is written into the folders it serves. It
binds to the loopback interface unless --addr says otherwise, and answers
only requests addressed to localhost, 127.0.0.1, [::1], the --addr host or
an --allow-host name (403 otherwise): a web page that rebinds its own name
to this machine cannot read what the viewer serves.

--export DIR writes a static copy instead of serving: the same pages,
read-only, over the trajectories --filter selects (the list's URL
parameters, e.g. --filter drift=true --filter checkpoint=sim:base), the
dataset tables and the reports; it opens from a file (DIR/index.html) or
any static host.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.export != "" {
				return runViewExport(cmd.OutOrStdout(), args, f)
			}
			if len(f.filter) > 0 {
				return errors.New("view: --filter selects what --export writes; in the browser, filter in the list")
			}
			return runView(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, f, nil)
		},
	}
	cmd.Flags().StringVar(&f.addr, "addr", "127.0.0.1:8421", "address to serve on (host:port; port 0 picks a free one)")
	cmd.Flags().StringArrayVar(&f.allowHost, "allow-host", nil, "a further host name the viewer answers to (the Host header; repeatable), for example this machine's LAN name when --addr is 0.0.0.0:PORT")
	cmd.Flags().StringVar(&f.labeling, "labeling", labels.Record, "labels to show: record (the records' own), or a labeling NAME in each run (antidrift judge)")
	cmd.Flags().StringVar(&f.export, "export", "", "write a static site into this new folder instead of serving (opens from file://)")
	cmd.Flags().StringArrayVar(&f.filter, "filter", nil, "with --export: KEY=VALUE of the trajectory list (checkpoint, framework, scenario, domain, status, type, kind, provision, success, drift, run, q, sort); repeatable")
	cmd.Flags().IntVar(&f.limit, "limit", 2000, "with --export: the most trajectories, and rows per dataset table, written")
	cmd.Flags().StringSliceVar(&f.scenarios, "scenarios", nil, "scenario files or folders to show beside the trajectories (default: each run's own source)")
	return cmd
}

// newViewServer opens the folders as the viewer reads them: scenarios from
// each run's source, the labeling asked for.
func newViewServer(paths []string, f viewFlags) (*view.Server, error) {
	srv, err := view.New(paths, func(dir string, m store.Manifest) (map[string]*scenario.Scenario, error) {
		return runScenarioSet(dir, m, f.scenarios, io.Discard)
	})
	if err != nil {
		return nil, err
	}
	ov, err := labels.OpenOverlay(srv.RunDirs(), f.labeling)
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	if ov != nil {
		srv.SetRelabel(ov.Apply)
	}
	return srv, nil
}

// runViewExport writes the static site.
func runViewExport(stdout io.Writer, paths []string, f viewFlags) error {
	vals := url.Values{}
	for _, kv := range f.filter {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("view: --filter %q: want KEY=VALUE (for example drift=true)", kv)
		}
		vals.Add(k, v)
	}
	srv, err := newViewServer(paths, f)
	if err != nil {
		return err
	}
	res, err := srv.Export(f.export, view.ExportOptions{Filter: vals, Limit: f.limit})
	if err != nil {
		return fmt.Errorf("view: %w", err)
	}
	fmt.Fprintf(stdout, "antidrift view: wrote %d trajectories", res.Trajectories)
	if res.Selected > res.Trajectories {
		fmt.Fprintf(stdout, " (the first %d of %d selected; --limit raises it)", res.Trajectories, res.Selected)
	}
	fmt.Fprintf(stdout, ", %d dataset table(s) (%d rows), %d report(s) to %s\nopen %s\n", res.Tables, res.TableRows, res.Reports, f.export, filepath.Join(f.export, "index.html"))
	return nil
}

// runView serves until ctx ends or the process is interrupted. ready, when
// given, receives the URL once the server listens (for tests).
func runView(ctx context.Context, stdout, stderr io.Writer, paths []string, f viewFlags, ready chan<- string) error {
	host, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		return fmt.Errorf("view: --addr %q: want host:port (for example 127.0.0.1:8421): %v", f.addr, err)
	}
	for _, h := range f.allowHost {
		if h == "" || strings.ContainsAny(h, "/ \t\r\n@?#") || strings.ContainsFunc(h, unicode.IsControl) {
			return fmt.Errorf("view: --allow-host %q: want a host name or address (the Host header's host, no scheme or path)", h)
		}
	}
	srv, err := newViewServer(paths, f)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("view: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "antidrift: warning: view serves %s beyond this machine (trajectories hold prompts and tool data); use --addr 127.0.0.1:PORT to keep it local; other machines reach it under the names given with --allow-host\n", ln.Addr())
	}
	url := "http://" + ln.Addr().String() + "/"
	runs, tables, reports := srv.Counts()
	fmt.Fprintf(stdout, "antidrift view: %d run folder(s), %d dataset table(s), %d report(s) at %s\n", runs, tables, reports, url)

	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// The first page is served at once; the index fills behind it, and
	// says when it is whole and how long it took.
	type indexResult struct {
		n    int
		err  error
		took time.Duration
	}
	indexed := make(chan indexResult, 1)
	go func() {
		t0 := time.Now()
		n, err := srv.IndexCount()
		indexed <- indexResult{n, err, time.Since(t0)}
	}()
	// Runs still being written are followed: their new records are listed
	// as they come.
	go srv.Watch(ctx, viewPollInterval)
	srv.AllowHosts([]string{host, ln.Addr().String()}, f.allowHost)
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if ready != nil {
		ready <- url
	}
	for {
		select {
		case ix := <-indexed:
			if ix.err != nil {
				fmt.Fprintf(stderr, "antidrift: view: indexing stopped: %v\n", ix.err)
			} else if runs > 0 {
				fmt.Fprintf(stdout, "antidrift view: indexed %d trajectories in %.1f s\n", ix.n, ix.took.Seconds())
			}
			indexed = nil
		case err := <-served:
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return fmt.Errorf("view: %w", err)
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return hs.Shutdown(sctx)
		}
	}
}
