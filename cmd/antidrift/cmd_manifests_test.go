package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// k8sJobs splits the printed YAML into documents and decodes each, strictly
// (an unknown field fails), into the Kubernetes API's batch/v1 Job.
func k8sJobs(t *testing.T, out string) []batchv1.Job {
	t.Helper()
	var jobs []batchv1.Job
	for _, doc := range strings.Split(out, "\n---\n") {
		var j batchv1.Job
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &j), doc)
		require.Equal(t, "batch/v1", j.APIVersion)
		require.Equal(t, "Job", j.Kind)
		jobs = append(jobs, j)
	}
	return jobs
}

func TestManifestsK8sIndexedJobAndMerge(t *testing.T) {
	code, out, stderr := runScenarios(t, "manifests", "k8s", "--shards", "3", "--parallelism", "2", "--name", "qwen-ckpt",
		"--image", "ghcr.io/acme/antidrift:1", "--api-key-secret", "vllm-key:token", "--",
		"--policy", "openai:qwen", "--base-url", "http://vllm:8000/v1", "--rollouts", "8", "--seed", "3")
	require.Equal(t, 0, code, stderr)
	jobs := k8sJobs(t, out)
	require.Len(t, jobs, 2)
	rj, mj := jobs[0], jobs[1]

	assert.Equal(t, "qwen-ckpt-rollout", rj.Name)
	require.NotNil(t, rj.Spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *rj.Spec.CompletionMode)
	assert.EqualValues(t, 3, *rj.Spec.Completions)
	assert.EqualValues(t, 2, *rj.Spec.Parallelism)
	assert.Equal(t, corev1.RestartPolicyNever, rj.Spec.Template.Spec.RestartPolicy)
	c := rj.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "ghcr.io/acme/antidrift:1", c.Image)
	args := strings.Join(c.Args, " ")
	assert.Contains(t, args, "rollout --policy openai:qwen --base-url http://vllm:8000/v1 --rollouts 8 --seed 3")
	assert.Contains(t, args, "--shard $(JOB_COMPLETION_INDEX)/3")
	assert.Contains(t, args, "--out /data/qwen-ckpt/shard-$(JOB_COMPLETION_INDEX)")
	// The completion index reaches the container as the variable the
	// args name; the key comes from the Secret, never as a value.
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
		assert.Empty(t, e.Value, e.Name)
	}
	require.NotNil(t, env["JOB_COMPLETION_INDEX"].ValueFrom)
	assert.Equal(t, "metadata.annotations['batch.kubernetes.io/job-completion-index']", env["JOB_COMPLETION_INDEX"].ValueFrom.FieldRef.FieldPath)
	require.NotNil(t, env["OPENAI_API_KEY"].ValueFrom)
	assert.Equal(t, "vllm-key", env["OPENAI_API_KEY"].ValueFrom.SecretKeyRef.Name)
	assert.Equal(t, "token", env["OPENAI_API_KEY"].ValueFrom.SecretKeyRef.Key)
	assert.Equal(t, "antidrift-data", rj.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)

	assert.Equal(t, "qwen-ckpt-merge", mj.Name)
	assert.Nil(t, mj.Spec.CompletionMode)
	// Exit 1 fails the index at once; the rest is retried; evictions do not count.
	require.NotNil(t, rj.Spec.PodFailurePolicy)
	rules := rj.Spec.PodFailurePolicy.Rules
	require.Len(t, rules, 2)
	assert.Equal(t, batchv1.PodFailurePolicyActionFailIndex, rules[0].Action)
	assert.Equal(t, []int32{1}, rules[0].OnExitCodes.Values)
	assert.Equal(t, "rollout", *rules[0].OnExitCodes.ContainerName)
	assert.Equal(t, batchv1.PodFailurePolicyActionIgnore, rules[1].Action)
	assert.Equal(t, corev1.DisruptionTarget, rules[1].OnPodConditions[0].Type)
	require.NotNil(t, mj.Spec.PodFailurePolicy)
	// The documented wait sees a failed Job, not only a complete one.
	assert.Contains(t, out, "grep -Eq 'Complete|Failed'")
	assert.Contains(t, out, "rollout failed")
	assert.Equal(t, []string{"merge", "--resume", "--out", "/data/qwen-ckpt/merged",
		"/data/qwen-ckpt/shard-0", "/data/qwen-ckpt/shard-1", "/data/qwen-ckpt/shard-2"}, mj.Spec.Template.Spec.Containers[0].Args)
	assert.Equal(t, "merge", mj.Labels["antidrift/part"])
}

func TestManifestsSlurmArrayScript(t *testing.T) {
	code, out, stderr := runScenarios(t, "manifests", "slurm", "--shards", "5", "--parallelism", "2", "--partition", "gpu",
		"--dir", "/scratch/runs/a b", "--", "--policy", "sim:base", "--rollouts", "2", "--scenarios", "my suite/")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "#SBATCH --array=0-4%2\n")
	assert.Contains(t, out, "#SBATCH --partition=gpu\n")
	assert.Contains(t, out, `--shard "${SLURM_ARRAY_TASK_ID}/5"`)
	assert.Contains(t, out, `'my suite/'`)
	assert.Contains(t, out, "--dependency=afterok:$jid")
	assert.Contains(t, out, `#SBATCH --output="/scratch/runs/a b/logs/%x-%A_%a.out"`)
	assert.Contains(t, out, "merge --resume --out")
	// The script is valid shell, and runs the rollout it says: run it with
	// the array index set and a stub binary that prints its arguments.
	dir := t.TempDir()
	script := filepath.Join(dir, "job.sbatch")
	require.NoError(t, os.WriteFile(script, []byte(out), 0o755))
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	b, err := exec.Command("bash", "-n", script).CombinedOutput()
	require.NoError(t, err, string(b))
	stub := filepath.Join(dir, "antidrift")
	require.NoError(t, os.WriteFile(stub, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '[%s]' \"$a\"; done\n"), 0o755))
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=3", "PATH="+dir+":"+os.Getenv("PATH"))
	b, err = cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	assert.Equal(t, "[rollout][--policy][sim:base][--rollouts][2][--scenarios][my suite/][--shard][3/5][--out][/scratch/runs/a b/shard-3]", string(b))

	// Exit codes: 2 (infrastructure errors) reruns the shard, up to three
	// times; 1 (fatal) is final at once.
	for _, tc := range []struct {
		codes    string // the stub's exit codes, one per run
		runs, rc int
	}{{"2 2 0", 3, 0}, {"2 2 2", 3, 2}, {"1 0 0", 1, 1}, {"2 1 0", 2, 1}} {
		counter := filepath.Join(dir, "runs-"+strings.ReplaceAll(tc.codes, " ", ""))
		stub := "#!/bin/sh\necho x >> " + counter + "\nn=$(wc -l < " + counter + ")\nset -- " + tc.codes + "\nshift $((n-1))\nexit $1\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "antidrift"), []byte(stub), 0o755))
		cmd := exec.Command("bash", script)
		cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=3", "ANTIDRIFT_RETRY_WAIT=0", "PATH="+dir+":"+os.Getenv("PATH"))
		err := cmd.Run()
		rc := 0
		if ee, ok := err.(*exec.ExitError); ok {
			rc = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		data, _ := os.ReadFile(counter)
		assert.Equal(t, tc.runs, strings.Count(string(data), "x"), tc.codes)
		assert.Equal(t, tc.rc, rc, tc.codes)
	}
}

func TestManifestsRefuseBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"shard set", []string{"k8s", "--shards", "2", "--", "--policy", "sim:base", "--shard", "0/2"}, "--shard is set by the manifests"},
		{"out set", []string{"slurm", "--shards", "2", "--", "--policy", "sim:base", "--out", "x"}, "--out is set by the manifests"},
		{"unknown rollout flag", []string{"k8s", "--shards", "2", "--", "--policy", "sim:base", "--rolouts", "2"}, "unknown flag: --rolouts"},
		{"no policy", []string{"k8s", "--shards", "2", "--", "--rollouts", "2"}, "--policy is required"},
		{"zero shards", []string{"k8s", "--shards", "0", "--", "--policy", "sim:base"}, "--shards 0"},
		{"bad name", []string{"k8s", "--shards", "2", "--name", "Big_Name", "--", "--policy", "sim:base"}, "--name"},
		{"bad secret", []string{"k8s", "--shards", "2", "--api-key-secret", "nokey", "--", "--policy", "sim:base"}, "NAME:KEY"},
		{"bad memory", []string{"k8s", "--shards", "2", "--memory", "lots", "--", "--policy", "sim:base"}, "--memory"},
		{"quote in the slurm dir", []string{"slurm", "--shards", "2", "--dir", `/x/"y`, "--", "--policy", "sim:base"}, "--dir"},
		{"unknown scheduler", []string{"nomad", "--shards", "2", "--", "--policy", "sim:base"}, "unknown scheduler"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runScenarios(t, append([]string{"manifests"}, tc.args...)...)
			assert.NotEqual(t, 0, code)
			assert.Empty(t, out)
			assert.Contains(t, stderr, tc.want)
		})
	}
}

// k8sObjects decodes each printed document, strictly, into the Kubernetes
// API type its kind names.
func k8sObjects(t *testing.T, out string) (kinds []string, deps map[string]appsv1.Deployment, sets []appsv1.StatefulSet, svcs map[string]corev1.Service) {
	t.Helper()
	deps, svcs = map[string]appsv1.Deployment{}, map[string]corev1.Service{}
	for _, doc := range strings.Split(out, "\n---\n") {
		var meta struct {
			Kind string `json:"kind"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &meta))
		kinds = append(kinds, meta.Kind)
		switch meta.Kind {
		case "Deployment":
			var d appsv1.Deployment
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &d), doc)
			require.Equal(t, "apps/v1", d.APIVersion)
			deps[d.Labels["antidrift/part"]] = d
		case "StatefulSet":
			var s appsv1.StatefulSet
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &s), doc)
			require.Equal(t, "apps/v1", s.APIVersion)
			sets = append(sets, s)
		case "Service":
			var s corev1.Service
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &s), doc)
			require.Equal(t, "v1", s.APIVersion)
			svcs[s.Labels["antidrift/part"]] = s
		default:
			t.Fatalf("unexpected kind %q", meta.Kind)
		}
	}
	return kinds, deps, sets, svcs
}

// TestManifestsK8sServe: the serving shape is env serve replicas behind a
// Service, env collect alone on the volume, and the queue between them;
// the writer and the replicas plan the same run from their arguments.
func TestManifestsK8sServe(t *testing.T) {
	code, out, stderr := runScenarios(t, "manifests", "k8s", "--serve", "--replicas", "3", "--name", "envq",
		"--image", "ghcr.io/acme/antidrift:1", "--queue-auth-secret", "nats-auth:token", "--pvc", "served", "--",
		"--scenarios", "builtin", "--max-sessions", "128", "--seed", "4", "--scheme", "uniform,risk", "--session-timeout=5m", "--max-steps", "12")
	require.Equal(t, 0, code, stderr)
	kinds, deps, sets, svcs := k8sObjects(t, out)
	assert.Equal(t, []string{"StatefulSet", "Service", "Deployment", "Deployment", "Service"}, kinds)

	require.Len(t, sets, 1)
	q := sets[0]
	assert.Equal(t, "envq-queue", q.Name)
	assert.EqualValues(t, 1, *q.Spec.Replicas)
	assert.Equal(t, []string{"queue", "serve", "--addr", "0.0.0.0:4222", "--store", "/queue", "--auth-env", "ANTIDRIFT_QUEUE_AUTH"}, q.Spec.Template.Spec.Containers[0].Args)
	assert.Equal(t, "queue", q.Spec.VolumeClaimTemplates[0].Name)
	assert.EqualValues(t, 4222, svcs["queue"].Spec.Ports[0].Port)

	serve, collect := deps["serve"], deps["collect"]
	assert.EqualValues(t, 3, *serve.Spec.Replicas)
	assert.EqualValues(t, 1, *collect.Spec.Replicas)
	assert.Equal(t, appsv1.RecreateDeploymentStrategyType, collect.Spec.Strategy.Type)
	assert.Equal(t, "served", collect.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	assert.Empty(t, serve.Spec.Template.Spec.Volumes, "replicas write no folder")
	sc, cc := serve.Spec.Template.Spec.Containers[0], collect.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "ghcr.io/acme/antidrift:1", sc.Image)
	assert.Equal(t, "/health", sc.ReadinessProbe.HTTPGet.Path)
	for _, c := range []corev1.Container{sc, cc, q.Spec.Template.Spec.Containers[0]} {
		require.Len(t, c.Env, 1)
		assert.Empty(t, c.Env[0].Value, "the credential comes from the Secret")
		assert.Equal(t, "nats-auth", c.Env[0].ValueFrom.SecretKeyRef.Name)
	}
	assert.Equal(t, corev1.ServiceAffinityClientIP, svcs["serve"].Spec.SessionAffinity)
	assert.EqualValues(t, 8000, svcs["serve"].Spec.Ports[0].Port)
	assert.Equal(t, svcs["serve"].Spec.Selector, serve.Spec.Selector.MatchLabels)
	assert.Equal(t, serve.Spec.Template.Labels["antidrift/part"], "serve")

	sargs, cargs := strings.Join(sc.Args, " "), strings.Join(cc.Args, " ")
	assert.Contains(t, sargs, "env serve --scenarios builtin --max-sessions 128")
	assert.Contains(t, sargs, "--queue nats://envq-queue:4222 --addr 0.0.0.0:8000 --queue-auth-env ANTIDRIFT_QUEUE_AUTH")
	assert.Equal(t, "env collect --scenarios builtin --seed 4 --scheme uniform,risk --max-steps 12 --queue nats://envq-queue:4222 --out /data/envq --queue-auth-env ANTIDRIFT_QUEUE_AUTH", cargs)

	// The writer and a replica plan one run from their arguments.
	plans := map[string]string{}
	for name, args := range map[string][]string{"serve": sc.Args[2:], "collect": cc.Args[2:]} {
		var f envFlags
		fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
		addEnvPlanFlags(fs, &f)
		if name == "serve" {
			addEnvServeFlags(fs, &f)
		}
		require.NoError(t, fs.Parse(args), name)
		er, err := planEnv(f)
		require.NoError(t, err)
		b, _ := json.Marshal([]any{er.manifest.Run, er.manifest.Plan, er.manifest.Settings.Rewards})
		plans[name] = string(b)
	}
	assert.Equal(t, plans["collect"], plans["serve"])

	// An existing NATS server: no queue in the manifest.
	code, out, stderr = runScenarios(t, "manifests", "k8s", "--serve", "--queue", "nats://nats.internal:4222", "--", "--seed", "2")
	require.Equal(t, 0, code, stderr)
	kinds, deps, _, _ = k8sObjects(t, out)
	assert.Equal(t, []string{"Deployment", "Deployment", "Service"}, kinds)
	assert.Contains(t, strings.Join(deps["serve"].Spec.Template.Spec.Containers[0].Args, " "), "--queue nats://nats.internal:4222")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"k8s", "--serve", "--", "--out", "x"}, "--out is set by the manifests"},
		{[]string{"k8s", "--serve", "--", "--addr", ":9"}, "--addr is set by the manifests"},
		{[]string{"k8s", "--serve", "--", "--sed", "2"}, "unknown flag: --sed"},
		{[]string{"k8s", "--serve", "--replicas", "0", "--"}, "--replicas 0"},
		{[]string{"k8s", "--serve", "--queue-auth-secret", "x", "--"}, "NAME:KEY"},
		{[]string{"slurm", "--serve", "--"}, "k8s only"},
		{[]string{"k8s", "--", "--policy", "sim:base"}, `"shards" not set`},
	} {
		code, out, stderr := runScenarios(t, append([]string{"manifests"}, tc.args...)...)
		assert.NotEqual(t, 0, code, tc.args)
		assert.Empty(t, out, tc.args)
		assert.Contains(t, stderr, tc.want, tc.args)
	}
}
