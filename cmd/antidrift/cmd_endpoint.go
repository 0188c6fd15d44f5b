package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/spf13/cobra"
)

func init() { register(newEndpointCmd) }

func newEndpointCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "endpoint",
		Short: "Inspect an OpenAI-compatible endpoint",
	}
	cmd.AddCommand(newEndpointCheckCmd())
	return cmd
}

func newEndpointCheckCmd() *cobra.Command {
	var ef endpointFlags
	var model string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check --base-url URL --model M",
		Short: "Report what an endpoint supports for rollouts, and how to fix what fails",
		Long: `Probe an OpenAI-compatible endpoint (vLLM, SGLang, Ollama, llama.cpp server,
OpenAI): list its models, send a plain completion (temperature 0, a seed, a
token limit) and a tool request that asks for one call, and report whether
structured tool calls come back, which parameters are accepted, the context
length where the server reports it, whether reasoning arrives in a separate
field or inside content, and the server flags that fix what fails.

rollout, judge, qc and rescore run the same check before they start
(--skip-endpoint-check skips it). Exit status 1 when rollouts through native
tool calling would not work as configured.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ef.baseURL == "" {
				return fmt.Errorf("--base-url is required (for example http://localhost:8000/v1)")
			}
			cfg, err := ef.clientConfig(model, 1)
			if err != nil {
				return err
			}
			cfg.MaxRetries = -1
			c, err := openai.New(cfg)
			if err != nil {
				return err
			}
			rep, err := c.Check(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else if err := printCheck(cmd.OutOrStdout(), rep); err != nil {
				return err
			}
			if !rep.OK {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&ef.baseURL, "base-url", "", "OpenAI-compatible base URL, e.g. http://localhost:8000/v1")
	fl.StringVar(&model, "model", "", "model name as the server knows it")
	fl.StringVar(&ef.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key")
	fl.DurationVar(&ef.requestTimeout, "request-timeout", 2*time.Minute, "timeout of one HTTP request")
	fl.StringVar(&ef.tokenParam, "token-param", "auto", "auto, max_tokens or max_completion_tokens")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON on stdout")
	_ = cmd.MarkFlagRequired("model")
	return cmd
}

func printCheck(w io.Writer, rep openai.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "endpoint\t%s\n", rep.BaseURL)
	fmt.Fprintf(tw, "model\t%s\n", rep.Model)
	if rep.Family != "" {
		fmt.Fprintf(tw, "server\t%s\n", rep.Family)
	}
	fmt.Fprintf(tw, "tool calls\t%s\n", rep.ToolCalls)
	fmt.Fprintf(tw, "token parameter\t%s\n", rep.TokenParam)
	fmt.Fprintf(tw, "reasoning\t%s\n", rep.Reasoning)
	if rep.ContextLength > 0 {
		fmt.Fprintf(tw, "context length\t%d\n", rep.ContextLength)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL\tFIX")
	for _, c := range rep.Capabilities {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.Status, c.Detail, c.Fix)
	}
	fmt.Fprintln(tw)
	verdict := "ready for rollouts"
	if !rep.OK {
		verdict = "NOT ready for native tool-calling rollouts: see the fixes above"
	}
	fmt.Fprintf(tw, "verdict\t%s\n", verdict)
	return tw.Flush()
}
