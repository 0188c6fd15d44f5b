package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
