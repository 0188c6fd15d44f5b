package main

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func init() { register(newManifestsCmd) }

// manifestFlags describe a sharded run for a batch scheduler.
type manifestFlags struct {
	name        string
	shards      int
	parallelism int
	image       string
	pvc         string
	dataDir     string
	keySecret   string
	keyEnv      string
	cpu         string
	memory      string
	namespace   string
	partition   string
	timeLimit   string
	cpus        int
	binary      string
	openai      bool // the policy talks to an endpoint: pass the key variable
	// The serving shape (--serve): env serve replicas, env collect, NATS.
	serve           bool
	replicas        int
	queueURL        string
	queueAuthSecret string
	queueStorage    string
}

func newManifestsCmd() *cobra.Command {
	var f manifestFlags
	cmd := &cobra.Command{
		Use:   "manifests k8s|slurm --shards N [flags] -- ROLLOUT_FLAGS...  |  manifests k8s --serve --replicas N [flags] -- ENV_SERVE_FLAGS...",
		Short: "Print a Kubernetes Indexed Job or a Slurm array script for a sharded rollout, with its merge step, or the Kubernetes shape of env serve replicas",
		Long: `Print what runs one rollout as N shards on a batch scheduler (the static path;
see rollout --queue for the dynamic one). Every shard is "antidrift rollout
ROLLOUT_FLAGS --shard i/N --out DIR/shard-i", resumable when the scheduler
reruns it; the merge step joins the shard folders into DIR/merged.

k8s: an Indexed Job (completion index i gives --shard i/N) and a merge Job,
both mounting the PersistentVolumeClaim --pvc at /data. Apply the merge Job
once the rollout Job is complete (kubectl wait --for=condition=complete).
The API key comes from the Secret --api-key-secret NAME:KEY, as the
environment variable --api-key-env names; never from the manifest.

slurm: an array script (sbatch it); its header names the merge submission,
which depends on the array (afterok).

Flags after -- are rollout's (checked here); --shard and --out are set by the
manifests.

k8s --serve: env serve as --replicas pods behind a Service (port 8000,
client-IP affinity), env collect as the one writer of the run folder on
--pvc, and the NATS queue between them (a queue serve StatefulSet with its
own volume, unless --queue names an existing server). Flags after -- are
env serve's; the writer gets the same ones but the serving-only ones. The
queue's credential comes from the Secret --queue-auth-secret NAME:KEY.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, rollout := args[0], args[1:]
			if !dnsLabel.MatchString(f.name) || len(f.name) > 50 {
				return fmt.Errorf("--name %q: must be a DNS label (lower-case letters, digits and '-') of at most 50 characters", f.name)
			}
			if f.serve {
				if kind != "k8s" && kind != "kubernetes" {
					return fmt.Errorf("--serve: the serving shape is for k8s only, not %q", kind)
				}
				return writeK8sServe(cmd.OutOrStdout(), f, rollout)
			}
			if !cmd.Flags().Changed("shards") {
				return fmt.Errorf(`required flag(s) "shards" not set (or --serve for the serving shape)`)
			}
			pol, err := checkShardedRollout(rollout)
			if err != nil {
				return err
			}
			f.openai = strings.HasPrefix(pol, "openai:")
			if f.shards < 1 {
				return fmt.Errorf("--shards %d: must be at least 1", f.shards)
			}
			if f.parallelism < 0 {
				return fmt.Errorf("--parallelism %d: must not be negative", f.parallelism)
			}
			if f.parallelism == 0 || f.parallelism > f.shards {
				f.parallelism = f.shards
			}
			switch kind {
			case "k8s", "kubernetes":
				return writeK8s(cmd.OutOrStdout(), f, rollout)
			case "slurm":
				return writeSlurm(cmd.OutOrStdout(), f, rollout)
			}
			return fmt.Errorf("unknown scheduler %q: want k8s or slurm", kind)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "antidrift", "job name (a DNS label)")
	// Required but with --serve (checked in RunE: a default of 0 would
	// fail the flags' range check before --serve is seen).
	fl.IntVar(&f.shards, "shards", 1, "number of shards N (required, but with --serve)")
	fl.IntVar(&f.parallelism, "parallelism", 0, "shards running at once (default: all)")
	fl.StringVar(&f.image, "image", "antidrift:latest", "k8s: container image holding the antidrift binary")
	fl.StringVar(&f.binary, "binary", "antidrift", "path of the antidrift binary (in the image, or on the Slurm nodes)")
	fl.StringVar(&f.pvc, "pvc", "antidrift-data", "k8s: PersistentVolumeClaim (ReadWriteMany) mounted at /data")
	fl.StringVar(&f.dataDir, "dir", "", "folder holding shard-i/ and merged/ (default: /data/NAME for k8s, ./NAME for slurm)")
	fl.StringVar(&f.keySecret, "api-key-secret", "", "k8s: Secret holding the API key, as NAME:KEY")
	fl.StringVar(&f.keyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable the key is given in (rollout's --api-key-env)")
	fl.StringVar(&f.cpu, "cpu", "2", "k8s: CPU request of a shard")
	fl.StringVar(&f.memory, "memory", "2Gi", "k8s: memory request of a shard")
	fl.StringVar(&f.namespace, "namespace", "", "k8s: namespace (default: none, kubectl's current)")
	fl.StringVar(&f.partition, "partition", "", "slurm: partition")
	fl.StringVar(&f.timeLimit, "time", "24:00:00", "slurm: time limit of a shard")
	fl.IntVar(&f.cpus, "cpus-per-task", 2, "slurm: CPUs of a shard")
	fl.BoolVar(&f.serve, "serve", false, "k8s: print the serving shape (env serve replicas, env collect, NATS) instead of a sharded rollout")
	fl.IntVar(&f.replicas, "replicas", 2, "--serve: env serve pods")
	fl.StringVar(&f.queueURL, "queue", "", "--serve: NATS URL of an existing JetStream server (default: a queue serve StatefulSet in the manifest)")
	fl.StringVar(&f.queueAuthSecret, "queue-auth-secret", "", "--serve: Secret holding the queue's credential (a token, or USER:PASSWORD), as NAME:KEY")
	fl.StringVar(&f.queueStorage, "queue-storage", "1Gi", "--serve: size of the queue's volume")
	return cmd
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// checkShardedRollout parses the rollout flags as rollout would, and
// refuses those the manifests set.
func checkShardedRollout(args []string) (policy string, err error) {
	fs := newRolloutCmd().Flags()
	if err := fs.Parse(args); err != nil {
		return "", fmt.Errorf("rollout flags after --: %w", err)
	}
	if fs.NArg() > 0 {
		return "", fmt.Errorf("rollout flags after --: unexpected argument %q", fs.Arg(0))
	}
	for _, name := range []string{"shard", "out", "queue"} {
		if fs.Changed(name) {
			return "", fmt.Errorf("rollout flags after --: --%s is set by the manifests; leave it out", name)
		}
	}
	if !fs.Changed("policy") {
		return "", fmt.Errorf("rollout flags after --: --policy is required")
	}
	if fs.Changed("api-key-env") {
		return "", fmt.Errorf("rollout flags after --: give --api-key-env to manifests itself, before --")
	}
	policy, _ = fs.GetString("policy")
	return policy, nil
}

func (f manifestFlags) dir(def string) string {
	if f.dataDir != "" {
		return strings.TrimRight(f.dataDir, "/")
	}
	return def
}

func buildK8sJobs(f manifestFlags, rollout []string) (*batchv1.Job, *batchv1.Job, error) {
	dir := f.dir("/data/" + f.name)
	req := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: f.cpu, corev1.ResourceMemory: f.memory} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, nil, fmt.Errorf("--%s %q: %w", strings.ToLower(string(name)), v, err)
		}
		req[name] = q
	}
	env := []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}}
	if f.keySecret != "" {
		name, key, ok := strings.Cut(f.keySecret, ":")
		if !ok || name == "" || key == "" {
			return nil, nil, fmt.Errorf("--api-key-secret %q: want NAME:KEY", f.keySecret)
		}
		env = append(env, corev1.EnvVar{Name: f.keyEnv, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}})
	}
	args := append([]string{"rollout"}, rollout...)
	if f.openai {
		args = append(args, "--api-key-env", f.keyEnv)
	}
	args = append(args, "--shard", fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", f.shards),
		"--out", dir+"/shard-$(JOB_COMPLETION_INDEX)")
	vol := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: f.pvc}}}
	mount := corev1.VolumeMount{Name: "data", MountPath: "/data"}
	meta := func(name, part string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: f.namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "antidrift", "antidrift/run": f.name, "antidrift/part": part}}
	}
	// Exit codes of rollout (docs/queue.md): 1 is final (bad input, a fatal
	// endpoint error, an endpoint refusing every request): rerunning the
	// same shard cannot help, so the index fails at once. 2 (episodes left
	// as infrastructure errors) and a killed pod are retried: the shard
	// resumes from its folder. A pod evicted or preempted does not count.
	podFailure := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: ptr("rollout"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}},
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
	}}
	mergeFailure := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: ptr("merge"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1, 2}}},
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
	}}
	indexed := batchv1.IndexedCompletion
	shards, par := int32(f.shards), int32(f.parallelism)
	backoff := int32(6)
	perIndex := int32(3)
	rolloutJob := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta(f.name+"-rollout", "rollout"),
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed, Completions: &shards, Parallelism: &par,
			BackoffLimitPerIndex: &perIndex, // each shard retried on its own
			PodFailurePolicy:     podFailure,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"antidrift/run": f.name, "antidrift/part": "rollout"}},
				Spec: corev1.PodSpec{
					// A failed shard is rerun in a new pod; the shard folder on
					// the volume makes it resume.
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "rollout", Image: f.image, Command: []string{f.binary}, Args: args, Env: env,
						Resources:    corev1.ResourceRequirements{Requests: req},
						VolumeMounts: []corev1.VolumeMount{mount},
					}},
					Volumes: []corev1.Volume{vol},
				},
			},
		},
	}
	one := int32(1)
	// --resume: rerunning the merge Job (after missing shards were done)
	// replaces an earlier merge instead of refusing it.
	mergeArgs := []string{"merge", "--resume", "--out", dir + "/merged"}
	for i := 0; i < f.shards; i++ {
		mergeArgs = append(mergeArgs, fmt.Sprintf("%s/shard-%d", dir, i))
	}
	mergeJob := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta(f.name+"-merge", "merge"),
		Spec: batchv1.JobSpec{
			Completions: &one, Parallelism: &one, BackoffLimit: &backoff, PodFailurePolicy: mergeFailure,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"antidrift/run": f.name, "antidrift/part": "merge"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "merge", Image: f.image, Command: []string{f.binary}, Args: mergeArgs,
						VolumeMounts: []corev1.VolumeMount{mount},
					}},
					Volumes: []corev1.Volume{vol},
				},
			},
		},
	}
	return rolloutJob, mergeJob, nil
}

func writeK8s(w io.Writer, f manifestFlags, rollout []string) error {
	rj, mj, err := buildK8sJobs(f, rollout)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# antidrift: %d shards of one rollout as an Indexed Job, then a merge Job.\n", f.shards)
	fmt.Fprintf(&b, "#   kubectl apply -f this.yaml -l antidrift/part=rollout\n")
	fmt.Fprintf(&b, "#   # wait until the Job is Complete or Failed (kubectl wait alone never sees a failure):\n")
	fmt.Fprintf(&b, "#   until s=$(kubectl get job/%s-rollout -o jsonpath='{.status.conditions[?(@.status==\"True\")].type}') && echo \"$s\" | grep -Eq 'Complete|Failed'; do sleep 10; done\n", f.name)
	fmt.Fprintf(&b, "#   echo \"$s\" | grep -q Complete || { echo 'rollout failed: kubectl describe job/%s-rollout'; exit 1; }\n", f.name)
	fmt.Fprintf(&b, "#   kubectl apply -f this.yaml -l antidrift/part=merge\n")
	fmt.Fprintf(&b, "# Exit 1 of a shard (a fatal endpoint error, bad input) fails its index at once; exit 2\n")
	fmt.Fprintf(&b, "# (infrastructure errors) is retried and resumes. The merge Job may be rerun (merge --resume).\n")
	for i, j := range []*batchv1.Job{rj, mj} {
		out, err := yaml.Marshal(j)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		// Drop the empty fields of objects that were never on a server.
		text := strings.ReplaceAll(string(out), "status: {}\n", "")
		text = strings.ReplaceAll(text, "  creationTimestamp: null\n", "")
		text = strings.ReplaceAll(text, "      creationTimestamp: null\n", "")
		b.WriteString(text)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// shellQuote quotes one word for sh.
func shellQuote(s string) string {
	if s != "" && regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func writeSlurm(w io.Writer, f manifestFlags, rollout []string) error {
	dir := f.dir("./" + f.name)
	if _, err := strconv.Atoi(strings.ReplaceAll(f.timeLimit, ":", "")); err != nil && !strings.Contains(f.timeLimit, "-") {
		return fmt.Errorf("--time %q: want HH:MM:SS or D-HH:MM:SS", f.timeLimit)
	}
	if f.cpus < 1 {
		return fmt.Errorf("--cpus-per-task %d: must be at least 1", f.cpus)
	}
	var b strings.Builder
	q := shellQuote
	if strings.ContainsAny(dir, "\"\n%") {
		return fmt.Errorf("--dir %q: must not hold a double quote, a newline or %%", dir)
	}
	merge := []string{q(f.binary), "merge", "--resume", "--out", q(dir + "/merged")}
	for i := 0; i < f.shards; i++ {
		merge = append(merge, q(fmt.Sprintf("%s/shard-%d", dir, i)))
	}
	fmt.Fprintf(&b, "#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", f.name)
	fmt.Fprintf(&b, "#SBATCH --array=0-%d%%%d\n", f.shards-1, f.parallelism)
	fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", f.cpus)
	fmt.Fprintf(&b, "#SBATCH --time=%s\n", f.timeLimit)
	if f.partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", f.partition)
	}
	fmt.Fprintf(&b, "#SBATCH --output=\"%s/logs/%%x-%%A_%%a.out\"\n", dir)
	fmt.Fprintf(&b, "#SBATCH --requeue\n")
	fmt.Fprintf(&b, "#\n# antidrift: %d shards of one rollout as a Slurm array; a requeued shard resumes.\n", f.shards)
	fmt.Fprintf(&b, "# Submit, then merge once every shard succeeded:\n")
	fmt.Fprintf(&b, "#   mkdir -p %s/logs && jid=$(sbatch --parsable this.sbatch)\n", q(dir))
	fmt.Fprintf(&b, "#   sbatch --dependency=afterok:$jid --job-name=%s-merge --wrap %s\n", f.name, q(strings.Join(merge, " ")))
	fmt.Fprintf(&b, "# The API key is read from $%s in the job's environment; never put it in this file.\n", f.keyEnv)
	fmt.Fprintf(&b, "# Exit 1 (a fatal endpoint error, bad input) is final; exit 2 (infrastructure errors)\n")
	fmt.Fprintf(&b, "# reruns the shard, which resumes, up to 3 times ($ANTIDRIFT_RETRY_WAIT seconds apart).\n")
	b.WriteString("set -uo pipefail\n")
	words := []string{q(f.binary), "rollout"}
	for _, a := range rollout {
		words = append(words, q(a))
	}
	if f.openai {
		words = append(words, "--api-key-env", q(f.keyEnv))
	}
	words = append(words, "--shard", fmt.Sprintf(`"${SLURM_ARRAY_TASK_ID}/%d"`, f.shards),
		"--out", fmt.Sprintf(`%s"/shard-${SLURM_ARRAY_TASK_ID}"`, q(dir)))
	b.WriteString("for attempt in 1 2 3; do\n")
	b.WriteString("  " + strings.Join(words, " ") + "\n")
	b.WriteString("  rc=$?\n")
	b.WriteString("  [ \"$rc\" -eq 2 ] || exit \"$rc\"\n")
	b.WriteString("  echo \"antidrift: shard ${SLURM_ARRAY_TASK_ID}: infrastructure errors left (attempt $attempt); retrying\" >&2\n")
	b.WriteString("  sleep \"${ANTIDRIFT_RETRY_WAIT:-60}\"\n")
	b.WriteString("done\n")
	b.WriteString("exit 2\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func ptr[T any](v T) *T { return &v }
