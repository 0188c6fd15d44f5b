package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The serving shape (manifests k8s --serve): env serve replicas behind a
// Service, env collect as the run folder's one writer, and the NATS queue
// between them (an embedded queue serve, unless --queue names a cluster).

// queueAuthVar is the variable the queue's credential reaches the pods in.
const queueAuthVar = "ANTIDRIFT_QUEUE_AUTH"

// serveOnlyFlags are env serve's flags that env collect does not take
// (addEnvServeFlags).
var serveOnlyFlags = func() map[string]bool {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	addEnvServeFlags(fs, &envFlags{})
	out := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { out[f.Name] = true })
	return out
}()

// checkServedRun parses the flags after -- as env serve would, and
// refuses those the manifests set.
func checkServedRun(args []string) (*pflag.FlagSet, error) {
	env := newEnvCmd()
	serve, _, err := env.Find([]string{"serve"})
	if err != nil {
		return nil, err
	}
	fs := serve.Flags()
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("env serve flags after --: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("env serve flags after --: unexpected argument %q", fs.Arg(0))
	}
	for _, name := range []string{"out", "queue", "addr", "queue-auth-env", "force"} {
		if fs.Changed(name) {
			return nil, fmt.Errorf("env serve flags after --: --%s is set by the manifests; leave it out", name)
		}
	}
	return fs, nil
}

// collectArgs are the flags after -- without env serve's own: the writer
// plans the same run from the rest.
func collectArgs(fs *pflag.FlagSet, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !serveOnlyFlags[name] {
			out = append(out, a)
			continue
		}
		if fl := fs.Lookup(name); !hasValue && fl != nil && fl.Value.Type() != "bool" {
			i++ // its value
		}
	}
	return out
}

func buildK8sServe(f manifestFlags, env []string) ([]any, error) {
	fs, err := checkServedRun(env)
	if err != nil {
		return nil, err
	}
	if f.replicas < 1 {
		return nil, fmt.Errorf("--replicas %d: must be at least 1", f.replicas)
	}
	req := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: f.cpu, corev1.ResourceMemory: f.memory} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %w", strings.ToLower(string(name)), v, err)
		}
		req[name] = q
	}
	queueSize, err := resource.ParseQuantity(f.queueStorage)
	if err != nil {
		return nil, fmt.Errorf("--queue-storage %q: %w", f.queueStorage, err)
	}
	var authEnv []corev1.EnvVar
	var authFlag []string
	if f.queueAuthSecret != "" {
		name, key, ok := strings.Cut(f.queueAuthSecret, ":")
		if !ok || name == "" || key == "" {
			return nil, fmt.Errorf("--queue-auth-secret %q: want NAME:KEY", f.queueAuthSecret)
		}
		authEnv = []corev1.EnvVar{{Name: queueAuthVar, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}}}
		authFlag = []string{"--queue-auth-env", queueAuthVar}
	}
	url := f.queueURL
	if url == "" {
		url = fmt.Sprintf("nats://%s-queue:4222", f.name)
	}
	labels := func(part string) map[string]string {
		return map[string]string{"app.kubernetes.io/name": "antidrift", "antidrift/run": f.name, "antidrift/part": part}
	}
	meta := func(name, part string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: f.namespace, Labels: labels(part)}
	}
	selector := func(part string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"antidrift/run": f.name, "antidrift/part": part}}
	}
	container := func(name string, args []string) corev1.Container {
		return corev1.Container{Name: name, Image: f.image, Command: []string{f.binary}, Args: args, Env: authEnv,
			Resources: corev1.ResourceRequirements{Requests: req}}
	}
	var objs []any

	if f.queueURL == "" {
		// One embedded JetStream server on its own volume: restarted, it
		// resumes every stream from its file store.
		args := append([]string{"queue", "serve", "--addr", "0.0.0.0:4222", "--store", "/queue"}, authFlagFor(authFlag, "--auth-env")...)
		c := container("queue", args)
		c.Ports = []corev1.ContainerPort{{Name: "nats", ContainerPort: 4222}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "queue", MountPath: "/queue"}}
		one := int32(1)
		objs = append(objs, &appsv1.StatefulSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
			ObjectMeta: meta(f.name+"-queue", "queue"),
			Spec: appsv1.StatefulSetSpec{
				Replicas: &one, ServiceName: f.name + "-queue", Selector: selector("queue"),
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("queue")},
					Spec: corev1.PodSpec{Containers: []corev1.Container{c}}},
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
					ObjectMeta: metav1.ObjectMeta{Name: "queue"},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: queueSize}}},
				}},
			},
		}, &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: meta(f.name+"-queue", "queue"),
			Spec: corev1.ServiceSpec{Selector: selector("queue").MatchLabels,
				Ports: []corev1.ServicePort{{Name: "nats", Port: 4222, TargetPort: intstr.FromString("nats")}}},
		})
	}

	// The writer: one pod holding the folder (its lock refuses a second
	// writer; Recreate never starts the new pod before the old one ends).
	dir := f.dir("/data/" + f.name)
	cargs := append(append([]string{"env", "collect"}, collectArgs(fs, env)...), "--queue", url, "--out", dir)
	cargs = append(cargs, authFlag...)
	wc := container("collect", cargs)
	wc.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	one := int32(1)
	objs = append(objs, &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(f.name+"-collect", "collect"),
		Spec: appsv1.DeploymentSpec{
			Replicas: &one, Selector: selector("collect"),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("collect")},
				Spec: corev1.PodSpec{Containers: []corev1.Container{wc},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: f.pvc}}}}}},
		},
	})

	// The servers: stateless replicas; a pod that dies loses only its
	// unfinished episodes.
	sargs := append(append([]string{"env", "serve"}, env...), "--queue", url, "--addr", "0.0.0.0:8000")
	sargs = append(sargs, authFlag...)
	sc := container("serve", sargs)
	sc.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}}
	sc.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")}}}
	reps := int32(f.replicas)
	grace := int64(30) // open episodes are published as abandoned on SIGTERM
	objs = append(objs, &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(f.name+"-serve", "serve"),
		Spec: appsv1.DeploymentSpec{
			Replicas: &reps, Selector: selector("serve"),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("serve")},
				Spec: corev1.PodSpec{Containers: []corev1.Container{sc}, TerminationGracePeriodSeconds: &grace}},
		},
	}, &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(f.name+"-serve", "serve"),
		Spec: corev1.ServiceSpec{Selector: selector("serve").MatchLabels,
			// An HTTP episode lives in one replica: a client's requests must
			// reach the pod that answered its reset.
			SessionAffinity: corev1.ServiceAffinityClientIP,
			Ports:           []corev1.ServicePort{{Name: "http", Port: 8000, TargetPort: intstr.FromString("http")}}},
	})
	return objs, nil
}

// authFlagFor renames the credential flag (queue serve takes --auth-env).
func authFlagFor(flag []string, name string) []string {
	if len(flag) == 0 {
		return nil
	}
	return []string{name, flag[1]}
}

func writeK8sServe(w io.Writer, f manifestFlags, env []string) error {
	objs, err := buildK8sServe(f, env)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# antidrift: env serve as %d replicas behind the NATS queue, env collect writing one run folder.\n", f.replicas)
	fmt.Fprintf(&b, "#   kubectl apply -f this.yaml    # the writer publishes the run; replicas wait for it (--attach-timeout)\n")
	fmt.Fprintf(&b, "#   clients: http://%s-serve:8000 (OpenEnv /reset /step /ws, MCP /mcp/{scenario})\n", f.name)
	fmt.Fprintf(&b, "# A replica that dies loses only its unfinished episodes; the writer restarted resumes.\n")
	for i, o := range objs {
		text, err := manifestYAML(o)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(text)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// manifestYAML is an object as YAML without what only a server fills in
// (status, creationTimestamp).
func manifestYAML(o any) (string, error) {
	j, err := json.Marshal(o)
	if err != nil {
		return "", err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return "", err
	}
	delete(m, "status")
	prune(m)
	out, err := yaml.Marshal(m)
	return string(out), err
}

// prune drops null creation timestamps and empty statuses, at any depth.
func prune(v any) {
	switch x := v.(type) {
	case map[string]any:
		if ts, ok := x["creationTimestamp"]; ok && ts == nil {
			delete(x, "creationTimestamp")
		}
		if st, ok := x["status"].(map[string]any); ok && len(st) == 0 {
			delete(x, "status")
		}
		for _, e := range x {
			prune(e)
		}
	case []any:
		for _, e := range x {
			prune(e)
		}
	}
}
