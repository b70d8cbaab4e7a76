// Package helm checks the Helm chart in taskflow/: helm lint (errors and
// warnings fail), the chart rendered as `helm template` renders it, and
// every rendered manifest decoded strictly into the Kubernetes Go types,
// so a misspelt or misplaced field fails here instead of in a cluster.
// It is a module of its own so that the main module does not depend on
// Helm and the Kubernetes libraries. Run: cd deploy/helm && go test ./...
package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	chartDir    = "taskflow"
	releaseName = "tf"
	namespace   = "queues"
	// the cluster version the chart is rendered and linted for (a Helm
	// built by go install defaults to v1.20); k8s.io/api v0.37 is
	// Kubernetes 1.37's API
	kubeVersion = "v1.34.0"
	// what the chart names its objects: RELEASE-CHART
	fullname = releaseName + "-taskflow"
)

// kinds maps apiVersion/kind to a new typed object to decode into; a
// manifest of any other kind fails.
var kinds = map[string]func() any{
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler":  func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &ServiceMonitor{} },
	"keda.sh/v1alpha1/ScaledObject":           func() any { return &ScaledObject{} },
}

// manifests is one rendering, decoded.
type manifests struct {
	all         []any
	deployments map[string]*appsv1.Deployment // by metadata.name
	services    map[string]*corev1.Service
	pdbs        map[string]*policyv1.PodDisruptionBudget
	secrets     map[string]*corev1.Secret
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	monitors    []*ServiceMonitor
	scaled      []*ScaledObject
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return ch
}

// render renders the chart with vals over its values.yaml, as `helm
// template tf taskflow -n queues --kube-version v1.34.0 -f vals` does
// (lookup finds nothing, as there), values.schema.json checked.
func render(ch *chart.Chart, vals map[string]any) (map[string]string, error) {
	return renderAt(ch, vals, false, kubeVersion)
}

// renderSchema is render, skipping the schema check when skipSchema (as
// --skip-schema-validation does): the templates and the strict decoding
// must still catch what reaches the manifests.
func renderSchema(ch *chart.Chart, vals map[string]any, skipSchema bool) (map[string]string, error) {
	return renderAt(ch, vals, skipSchema, kubeVersion)
}

// renderAt renders for the cluster version kubeVersion.
func renderAt(ch *chart.Chart, vals map[string]any, skipSchema bool, kube string) (map[string]string, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	kv, err := chartutil.ParseKubeVersion(kube)
	if err != nil {
		return nil, err
	}
	caps.KubeVersion = *kv
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, kube) {
		return nil, fmt.Errorf("chart's kubeVersion %q excludes %s", c, kube)
	}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, chartutil.ReleaseOptions{
		Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true,
	}, caps, skipSchema)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, top)
}

// decodeAll decodes every manifest of a rendering strictly.
func decodeAll(files map[string]string) (*manifests, error) {
	m := &manifests{
		deployments: map[string]*appsv1.Deployment{},
		services:    map[string]*corev1.Service{},
		pdbs:        map[string]*policyv1.PodDisruptionBudget{},
		secrets:     map[string]*corev1.Secret{},
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, the _*.tpl partials
		}
		docs := releaseutil.SplitManifests(files[name])
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			doc := docs[k]
			if isBlank(doc) {
				continue
			}
			obj, err := decodeStrict([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("%s: %w\n%s", name, err, doc)
			}
			m.all = append(m.all, obj)
			switch o := obj.(type) {
			case *appsv1.Deployment:
				m.deployments[o.Name] = o
			case *corev1.Service:
				m.services[o.Name] = o
			case *policyv1.PodDisruptionBudget:
				m.pdbs[o.Name] = o
			case *corev1.Secret:
				m.secrets[o.Name] = o
			case *autoscalingv2.HorizontalPodAutoscaler:
				m.hpas = append(m.hpas, o)
			case *ServiceMonitor:
				m.monitors = append(m.monitors, o)
			case *ScaledObject:
				m.scaled = append(m.scaled, o)
			}
		}
	}
	return m, nil
}

// isBlank: a document with nothing but comments and blank lines.
func isBlank(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// decodeStrict turns one YAML document into the typed object its
// apiVersion and kind name: YAML → JSON (duplicate keys fail), then
// encoding/json with DisallowUnknownFields (an unknown field or a value of
// the wrong type fails), then once more case-sensitively (encoding/json
// would take `Replicas` for `replicas`; the API server would not).
func decodeStrict(doc []byte) (any, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("YAML: %w", err)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("apiVersion/kind: %w", err)
	}
	newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind %s/%s: the test decodes only the kinds it knows", tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: data after the object", tm.Kind)
	}
	strictErrs, err := sigsjson.UnmarshalStrict(js, newObj(), sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("%s: %v", tm.Kind, strictErrs)
	}
	return obj, nil
}

// vals parses a values file's text.
func vals(t *testing.T, text string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValues([]byte(text))
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	return v.AsMap()
}
