package cli

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/vplayer/vplayer/metrics"
	"github.com/vplayer/vplayer/stream"
)

// kubernetesDir holds the Kubernetes manifests of one workflow.
var kubernetesDir = filepath.Join(repoRoot, "deploy", "kubernetes")

// manifests are the objects of deploy/kubernetes, decoded.
type manifests struct {
	deployments []*appsv1.Deployment
	secrets     []*corev1.Secret
	pdbs        []*policyv1.PodDisruptionBudget
}

// decodeManifest decodes one YAML document strictly into the API type its apiVersion and kind
// name: an unknown or misspelt field, a duplicate key or an unknown kind is an error.
func decodeManifest(doc []byte, into *manifests) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		d := &appsv1.Deployment{}
		into.deployments, obj = append(into.deployments, d), d
	case "v1 Secret":
		s := &corev1.Secret{}
		into.secrets, obj = append(into.secrets, s), s
	case "policy/v1 PodDisruptionBudget":
		p := &policyv1.PodDisruptionBudget{}
		into.pdbs, obj = append(into.pdbs, p), p
	default:
		return fmt.Errorf("apiVersion %q kind %q: not a kind this test knows; add it to decodeManifest", tm.APIVersion, tm.Kind)
	}
	return yaml.UnmarshalStrict(doc, obj)
}

// fmtPtr prints *p, or "unset".
func fmtPtr[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// yamlDocs splits a YAML stream at its "---" lines, dropping empty documents.
func yamlDocs(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(b, []byte("\n---")) {
		if len(bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(d), []byte("---")))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(kubernetesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no manifests in %s", kubernetesDir)
	}
	var m manifests
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range yamlDocs(b) {
			if err := decodeManifest(doc, &m); err != nil {
				t.Errorf("%s, document %d: %v", f, i+1, err)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return m
}

// TestKubernetesManifests_strict shows that the decoding catches a misspelt field, in a copy of
// the Deployment with one field renamed.
func TestKubernetesManifests_strict(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(kubernetesDir, "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typo := range []struct{ from, to string }{
		{"replicas:", "replica:"},
		{"livenessProbe:", "livenesProbe:"},
		{"secretKeyRef:", "secretRef:"},
	} {
		if !bytes.Contains(b, []byte(typo.from)) {
			t.Fatalf("deployment.yaml has no %q to misspell", typo.from)
		}
		bad := bytes.Replace(b, []byte(typo.from), []byte(typo.to), 1)
		if err := decodeManifest(bad, &manifests{}); err == nil {
			t.Errorf("deployment.yaml with %q for %q decoded without an error", typo.to, typo.from)
		} else if !strings.Contains(err.Error(), strings.TrimSuffix(typo.to, ":")) {
			t.Errorf("error for %q does not name it: %v", typo.to, err)
		}
	}
}

// TestKubernetesManifests decodes every manifest strictly with the Kubernetes API types and
// checks what they must agree on: two replicas of one workflow whose arguments parse and validate
// with the real flag set, DSNs without passwords and the passwords from keys the Secret has,
// probes on the --metrics-addr port at a path that answers 200 for a standby and while retrying,
// memory above the measured peak RSS, a grace period above the 2s stop, and a
// PodDisruptionBudget selecting the Deployment's pods that lets one of them be evicted.
func TestKubernetesManifests(t *testing.T) {
	m := loadManifests(t)
	if len(m.deployments) != 1 || len(m.pdbs) != 1 || len(m.secrets) != 1 {
		t.Fatalf("%s has %d Deployments, %d PodDisruptionBudgets, %d Secrets; want one of each (one workflow)",
			kubernetesDir, len(m.deployments), len(m.pdbs), len(m.secrets))
	}
	d, pdb, secret := m.deployments[0], m.pdbs[0], m.secrets[0]

	if r := d.Spec.Replicas; r == nil || *r != 2 {
		t.Errorf("Deployment %s replicas=%s, want 2: an owner and a standby", d.Name, fmtPtr(r))
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		t.Fatalf("Deployment selector: %v", err)
	}
	podLabels := labels.Set(d.Spec.Template.Labels)
	if sel.Empty() || !sel.Matches(podLabels) {
		t.Errorf("Deployment selector %v does not select its pod template's labels %v", sel, podLabels)
	}
	pdbSel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		t.Fatalf("PodDisruptionBudget selector: %v", err)
	}
	if pdbSel.Empty() || !pdbSel.Matches(podLabels) {
		t.Errorf("PodDisruptionBudget selector %v does not select the Deployment's pods %v", pdbSel, podLabels)
	}
	if mu := pdb.Spec.MaxUnavailable; pdb.Spec.MinAvailable != nil || mu == nil || mu.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget wants maxUnavailable 1 (one of the two pods evictable at a time), got minAvailable %v maxUnavailable %v",
			pdb.Spec.MinAvailable, mu)
	}

	spec := d.Spec.Template.Spec
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g <= 2 || *g > 30 {
		t.Errorf("terminationGracePeriodSeconds=%s, want above the 2s graceful stop and at most 30", fmtPtr(g))
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("the pod has %d containers, want one vplayer", len(spec.Containers))
	}
	c := spec.Containers[0]

	// The arguments, with the real flag set.
	if len(c.Args) == 0 || c.Args[0] != "run" {
		t.Fatalf("container args %q, want vplayer run", c.Args)
	}
	fs, f := newRunFlags(io.Discard)
	if err := fs.Parse(c.Args[1:]); err != nil {
		t.Fatalf("container args %q: %v", c.Args, err)
	}
	if err := f.validate(); err != nil {
		t.Errorf("container args %q do not validate: %v", c.Args, err)
	}
	for name, dsn := range map[string]string{"--source": f.source, "--target": f.target} {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Errorf("%s %q: %v", name, dsn, err)
		} else if cfg.Passwd != "" {
			t.Errorf("%s DSN holds a password: it belongs in the Secret", name)
		}
	}

	// The passwords, from the Secret.
	keys := map[string]bool{}
	for k := range secret.StringData {
		keys[k] = true
	}
	for k := range secret.Data {
		keys[k] = true
	}
	for _, want := range []string{"VPLAYER_SOURCE_PASSWORD", "VPLAYER_TARGET_PASSWORD"} {
		var ref *corev1.SecretKeySelector
		for _, e := range c.Env {
			if e.Name == want && e.ValueFrom != nil {
				ref = e.ValueFrom.SecretKeyRef
			}
		}
		switch {
		case ref == nil:
			t.Errorf("the container has no %s from a secretKeyRef", want)
		case ref.Name != secret.Name:
			t.Errorf("%s is from Secret %q, want %q", want, ref.Name, secret.Name)
		case !keys[ref.Key]:
			t.Errorf("%s is from key %q, which Secret %s does not have (it has %v)", want, ref.Key, secret.Name, keys)
		}
	}

	// The probes: on the --metrics-addr port, at a path that answers 200 whatever the state.
	_, portStr, err := net.SplitHostPort(f.metricsAddr)
	if err != nil {
		t.Fatalf("--metrics-addr %q: %v", f.metricsAddr, err)
	}
	metricsPort, _ := strconv.Atoi(portStr)
	if metricsPort == 0 {
		t.Fatalf("--metrics-addr %q: want a fixed port for the probes", f.metricsAddr)
	}
	portOf := func(p corev1.Probe) int {
		if p.HTTPGet == nil {
			return -1
		}
		if p.HTTPGet.Port.IntValue() != 0 {
			return p.HTTPGet.Port.IntValue()
		}
		for _, cp := range c.Ports {
			if cp.Name == p.HTTPGet.Port.String() {
				return int(cp.ContainerPort)
			}
		}
		return -1
	}
	col := metrics.New(metrics.Options{Workflow: f.workflow})
	srv := httptest.NewServer(metrics.Handler(metrics.NewRegistry(col), col))
	defer srv.Close()
	for name, p := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s is not an httpGet probe", name)
			continue
		}
		if got := portOf(*p); got != metricsPort {
			t.Errorf("%s port %v is %d, want the --metrics-addr port %d", name, p.HTTPGet.Port.String(), got, metricsPort)
		}
		// A standby is in state Init until it owns the lease; a restart fixes neither that nor
		// an error being retried.
		for _, state := range []string{"Init", stream.StateRetrying, "Running"} {
			col.OnState(state)
			resp, err := http.Get(srv.URL + p.HTTPGet.Path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s GET %s answers %d in state %s, want 200: it must not fail a standby or a retrying owner",
					name, p.HTTPGet.Path, resp.StatusCode, state)
			}
		}
	}
	found := false
	for _, cp := range c.Ports {
		found = found || int(cp.ContainerPort) == metricsPort
	}
	if !found {
		t.Errorf("the container declares no port %d (--metrics-addr)", metricsPort)
	}

	// Memory above the measured peak RSS (21 to 24 MiB, docs/benchmarks.md).
	peak := resource.MustParse("24Mi")
	req, lim := c.Resources.Requests[corev1.ResourceMemory], c.Resources.Limits[corev1.ResourceMemory]
	if req.Cmp(peak) <= 0 {
		t.Errorf("memory request %v, want above the measured peak RSS %v", req.String(), peak.String())
	}
	if lim.Cmp(req) < 0 {
		t.Errorf("memory limit %v is below the request %v", lim.String(), req.String())
	}
}
