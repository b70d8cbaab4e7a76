package helm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// The value sets rendered, each checked on its own below.
const (
	// everything on: a dedicated scheduler (the workers' off), the five
	// example services, KEDA autoscaling, the ServiceMonitor, a Secret
	// made beforehand with keys of its own, a shared artifacts volume
	everythingValues = `
scheduler: {enabled: true}
worker: {runScheduler: false, concurrency: 25}
services: {names: [report, analysis, document, export, wordcount]}
autoscaling: {enabled: true}
serviceMonitor: {enabled: true, labels: {release: prom}}
artifacts: {existingClaim: taskflow-artifacts}
secret:
  existingSecret: taskflow-prod
  keys: {redisUrl: redis-url, databaseUrl: database-url, adminKey: admin-key, openrouterApiKey: openrouter}
`
	// the same autoscaling as an HPA on the Prometheus Adapter's metric
	hpaValues = `
autoscaling: {enabled: true, kind: hpa, minReplicas: 2, maxReplicas: 20, tasksPerWorker: 100}
`
	// the least: one API, nothing else, no PDB
	minimalValues = `
api: {replicas: 1, podDisruptionBudget: {enabled: false}, preStopSleepSeconds: 0}
worker: {enabled: false}
orchestrator: {enabled: false}
`
	// a longer drain for workers only, and every secret given as a value
	drainValues = `
worker: {shutdownGraceSeconds: 45, terminationMarginSeconds: 15}
secret:
  values:
    REDIS_URL: rediss://redis.example.internal:6380/2
    DATABASE_URL: postgres://taskflow@pg/taskflow
    TASKFLOW_ADMIN_KEY: 0123456789abcdef0123
    OPENROUTER_API_KEY: sk-test
`
)

// TestLint is `helm lint --strict`: errors and warnings fail (INFO is
// shown), for the default values and the value sets above.
func TestLint(t *testing.T) {
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, values string }{
		{"defaults", ""}, {"everything", everythingValues}, {"hpa", hpaValues}, {"minimal", minimalValues}, {"drain", drainValues},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(chartDir, vals(t, tc.values), namespace, kv)
			for _, msg := range l.Messages {
				if msg.Severity >= support.WarningSev {
					t.Errorf("lint: %s", msg)
				} else {
					t.Logf("lint: %s", msg)
				}
			}
		})
	}
}

// TestRenderedManifests renders each value set, decodes every manifest
// strictly and checks what the deployment relies on.
func TestRenderedManifests(t *testing.T) {
	ch := loadChart(t)
	for _, tc := range []struct {
		name   string
		values string
		// the Deployments expected, by component
		roles []string
		check func(t *testing.T, m *manifests)
		// the cluster's version, when not kubeVersion
		kube string
	}{
		{name: "defaults", roles: []string{"api", "worker", "orchestrator"}, check: checkDefaults},
		{name: "everything", values: everythingValues, check: checkEverything,
			roles: []string{"api", "worker", "scheduler", "orchestrator",
				"service-report", "service-analysis", "service-document", "service-export", "service-wordcount"}},
		{name: "hpa", values: hpaValues, roles: []string{"api", "worker", "orchestrator"}, check: checkHPA},
		{name: "minimal", values: minimalValues, roles: []string{"api"}, check: checkMinimal},
		{name: "drain", values: drainValues, roles: []string{"api", "worker", "orchestrator"}, check: checkDrain},
		{name: "before 1.30", kube: "v1.29.4", roles: []string{"api", "worker", "orchestrator"}, check: checkBefore130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := kubeVersion
			if tc.kube != "" {
				kube = tc.kube
			}
			files, err := renderAt(ch, vals(t, tc.values), false, kube)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			m, err := decodeAll(files)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if len(m.deployments) != len(tc.roles) {
				t.Errorf("%d Deployments, want %d (%v)", len(m.deployments), len(tc.roles), tc.roles)
			}
			for _, role := range tc.roles {
				d := m.deployments[fullname+"-"+role]
				if d == nil {
					t.Errorf("no Deployment %s-%s", fullname, role)
					continue
				}
				checkDeployment(t, m, role, d)
			}
			checkPDBs(t, m)
			tc.check(t, m)
		})
	}
}

// checkDeployment: what every role's Deployment must hold.
func checkDeployment(t *testing.T, m *manifests, role string, d *appsv1.Deployment) {
	t.Helper()
	name := d.Name
	// the selector selects the pods the template makes, and only this role's
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		t.Fatalf("%s: selector: %v", name, err)
	}
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("%s: selector %s does not match its pods' labels %v", name, sel, d.Spec.Template.Labels)
	}
	if got := d.Spec.Selector.MatchLabels["app.kubernetes.io/component"]; got != role {
		t.Errorf("%s: selects component %q", name, got)
	}
	for other, od := range m.deployments {
		if other != name && sel.Matches(labels.Set(od.Spec.Template.Labels)) {
			t.Errorf("%s: its selector also matches %s's pods", name, other)
		}
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers", name, len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != "taskflow:0.1.0" {
		t.Errorf("%s: image %q, want taskflow:<appVersion>", name, c.Image)
	}
	if len(c.Command) != 0 {
		t.Errorf("%s: command %v overrides the image's entrypoint", name, c.Command)
	}
	wantArg := strings.SplitN(role, "-", 2)[0] // service-report → service
	if len(c.Args) == 0 || c.Args[0] != wantArg {
		t.Errorf("%s: args %v, want the role %q first", name, c.Args, wantArg)
	}

	// non-root, read-only root, no capabilities
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 {
		t.Errorf("%s: pod securityContext %+v: want runAsNonRoot and uid 65532", name, psc)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("%s: container securityContext %+v", name, sc)
	}
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm.Name
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	for path, vol := range mounts {
		if _, ok := vols[vol]; !ok {
			t.Errorf("%s: %s mounts volume %q, which the pod does not have", name, path, vol)
		}
	}
	if dir, ok := envOf(c)["TASKFLOW_ARTIFACT_DIR"]; ok && mounts[dir.Value] == "" {
		t.Errorf("%s: TASKFLOW_ARTIFACT_DIR %s is not a mounted volume (the root is read-only)", name, dir.Value)
	}
	if v, ok := vols[mounts["/tmp"]]; !ok || v.EmptyDir == nil {
		t.Errorf("%s: no writable /tmp (emptyDir) under the read-only root", name)
	}
	if strings.HasPrefix(role, "service-") {
		if v, ok := vols[mounts["/data/output"]]; !ok || v.EmptyDir == nil {
			t.Errorf("%s: no emptyDir at /data/output, where a service writes its files", name)
		}
	}

	// resources: requests on every role, a memory limit
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %+v: want cpu and memory requests and a memory limit", name, c.Resources)
	}

	// the drain: Kubernetes waits longer than the process drains
	env := envOf(c)
	if len(env) != len(c.Env) {
		t.Errorf("%s: an environment variable is set twice: %v", name, c.Env)
	}
	graceText, ok := env["TASKFLOW_SHUTDOWN_GRACE"]
	if !ok || graceText.Value == "" {
		t.Fatalf("%s: no TASKFLOW_SHUTDOWN_GRACE", name)
	}
	grace, err := time.ParseDuration(graceText.Value)
	if err != nil {
		t.Fatalf("%s: TASKFLOW_SHUTDOWN_GRACE %q: %v", name, graceText.Value, err)
	}
	preStop := 0 * time.Second
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	if pod.TerminationGracePeriodSeconds == nil {
		t.Fatalf("%s: no terminationGracePeriodSeconds", name)
	}
	term := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if term < preStop+grace+5*time.Second {
		t.Errorf("%s: terminationGracePeriodSeconds %v leaves no margin over preStop %v + drain %v", name, term, preStop, grace)
	}

	// secrets come from the Secret, never as plain values
	secretName := secretNameOf(m)
	for _, v := range []string{"REDIS_URL", "DATABASE_URL", "TASKFLOW_ADMIN_KEY", "OPENROUTER_API_KEY"} {
		e, ok := env[v]
		if !ok {
			if v == "REDIS_URL" {
				t.Errorf("%s: no REDIS_URL", name)
			}
			continue
		}
		ref := e.ValueFrom
		if e.Value != "" || ref == nil || ref.SecretKeyRef == nil {
			t.Errorf("%s: %s is not read from a Secret", name, v)
			continue
		}
		if ref.SecretKeyRef.Name != secretName {
			t.Errorf("%s: %s from Secret %q, want %q", name, v, ref.SecretKeyRef.Name, secretName)
		}
		required := v == "REDIS_URL" || v == "TASKFLOW_ADMIN_KEY"
		if optional := ref.SecretKeyRef.Optional != nil && *ref.SecretKeyRef.Optional; optional == required {
			t.Errorf("%s: %s optional=%v", name, v, optional)
		}
		if s := m.secrets[secretName]; s != nil && required {
			if _, ok := s.Data[ref.SecretKeyRef.Key]; !ok {
				t.Errorf("%s: %s reads key %q, which Secret %s lacks", name, v, ref.SecretKeyRef.Key, secretName)
			}
		}
	}
	// only the API holds the admin key
	if _, ok := env["TASKFLOW_ADMIN_KEY"]; ok != (role == "api") {
		t.Errorf("%s: has TASKFLOW_ADMIN_KEY: %v", name, ok)
	}

	if role == "api" {
		checkAPI(t, m, d, c)
	} else if len(c.Ports) != 0 || c.LivenessProbe != nil || c.ReadinessProbe != nil {
		t.Errorf("%s: ports or probes on a role that serves no HTTP", name)
	}
}

// checkAPI: probes on /live and /ready, the port, and the Service.
func checkAPI(t *testing.T, m *manifests, d *appsv1.Deployment, c corev1.Container) {
	t.Helper()
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("api: ports %+v, want http 8080", c.Ports)
	}
	if addr := envOf(c)["TASKFLOW_ADDR"].Value; addr != ":8080" {
		t.Errorf("api: TASKFLOW_ADDR %q, want :8080 (the container port)", addr)
	}
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/live"}, {"readiness", c.ReadinessProbe, "/ready"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("api: no %s httpGet probe", p.kind)
			continue
		}
		if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "http" {
			t.Errorf("api: %s probe %s on %s, want %s on http", p.kind, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path)
		}
	}
	svc := m.services[fullname+"-api"]
	if svc == nil {
		t.Fatalf("no Service %s-api", fullname)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("api Service ports %+v", svc.Spec.Ports)
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	for name, od := range m.deployments {
		if sel.Matches(labels.Set(od.Spec.Template.Labels)) != (od == d) {
			t.Errorf("api Service selector %s and Deployment %s", sel, name)
		}
	}
}

// checkPDBs: each PDB selects exactly one Deployment's pods.
func checkPDBs(t *testing.T, m *manifests) {
	t.Helper()
	for name, pdb := range m.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			t.Fatalf("PDB %s: %v", name, err)
		}
		var selected []string
		for dn, d := range m.deployments {
			if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				selected = append(selected, dn)
			}
		}
		if len(selected) != 1 || selected[0] != name {
			t.Errorf("PDB %s selects the pods of %v, want those of Deployment %s", name, selected, name)
		}
		if (pdb.Spec.MaxUnavailable == nil) == (pdb.Spec.MinAvailable == nil) {
			t.Errorf("PDB %s: want one of maxUnavailable and minAvailable", name)
		}
	}
}

func checkDefaults(t *testing.T, m *manifests) {
	for _, want := range []string{fullname + "-api", fullname + "-worker"} {
		if m.pdbs[want] == nil {
			t.Errorf("no PDB %s", want)
		}
	}
	if len(m.pdbs) != 2 || len(m.hpas)+len(m.scaled)+len(m.monitors) != 0 {
		t.Errorf("%d PDBs, %d HPAs, %d ScaledObjects, %d ServiceMonitors: want 2 PDBs only",
			len(m.pdbs), len(m.hpas), len(m.scaled), len(m.monitors))
	}
	s := m.secrets[fullname]
	if s == nil {
		t.Fatalf("no Secret %s", fullname)
	}
	if got := string(s.Data["REDIS_URL"]); got != "redis://redis:6379/0" {
		t.Errorf("Secret REDIS_URL %q", got)
	}
	if k := s.Data["TASKFLOW_ADMIN_KEY"]; len(k) < 16 {
		t.Errorf("generated admin key %q: want 16 characters or more", k)
	}
	// empty optional values are left out of the Secret and of the env
	if _, ok := s.Data["DATABASE_URL"]; ok {
		t.Errorf("Secret holds an empty DATABASE_URL")
	}
	if _, ok := envOf(m.deployments[fullname+"-orchestrator"].Spec.Template.Spec.Containers[0])["DATABASE_URL"]; ok {
		t.Errorf("orchestrator reads DATABASE_URL, which the Secret lacks")
	}
	w := m.deployments[fullname+"-worker"]
	if w.Spec.Replicas == nil || *w.Spec.Replicas != 2 {
		t.Errorf("worker replicas %v, want 2", w.Spec.Replicas)
	}
	if got := strings.Join(w.Spec.Template.Spec.Containers[0].Args, " "); got != "worker --concurrency 10" {
		t.Errorf("worker args %q", got)
	}
	if g := *w.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 30 {
		t.Errorf("worker terminationGracePeriodSeconds %d, want 10 s drain + 20 s margin", g)
	}
	if g := envOf(w.Spec.Template.Spec.Containers[0])["TASKFLOW_SHUTDOWN_GRACE"].Value; g != "10s" {
		t.Errorf("worker TASKFLOW_SHUTDOWN_GRACE %q, want 10s (the default)", g)
	}
	a := m.deployments[fullname+"-api"].Spec.Template.Spec
	if p := a.Containers[0].Lifecycle; p == nil || p.PreStop == nil || p.PreStop.Sleep == nil || p.PreStop.Sleep.Seconds != 5 {
		t.Errorf("api preStop %+v, want a 5 s sleep", p)
	}
	if *a.TerminationGracePeriodSeconds != 35 {
		t.Errorf("api terminationGracePeriodSeconds %d, want 5 + 10 + 20", *a.TerminationGracePeriodSeconds)
	}
	// the checksum of the chart's Secret rolls the pods when it changes
	if m.deployments[fullname+"-api"].Spec.Template.Annotations["checksum/secret"] == "" {
		t.Errorf("no checksum/secret annotation")
	}
}

func checkEverything(t *testing.T, m *manifests) {
	if len(m.secrets) != 0 {
		t.Errorf("the chart made a Secret although existingSecret is set")
	}
	w := m.deployments[fullname+"-worker"]
	if w.Spec.Replicas != nil {
		t.Errorf("worker replicas %d set although the autoscaler owns the count", *w.Spec.Replicas)
	}
	if got := strings.Join(w.Spec.Template.Spec.Containers[0].Args, " "); got != "worker --concurrency 25 --scheduler=false" {
		t.Errorf("worker args %q", got)
	}
	if got := strings.Join(m.deployments[fullname+"-service-report"].Spec.Template.Spec.Containers[0].Args, " "); got != "service report --concurrency 5" {
		t.Errorf("service args %q", got)
	}
	// the existing Secret's own key names
	api := envOf(m.deployments[fullname+"-api"].Spec.Template.Spec.Containers[0])
	for v, key := range map[string]string{"REDIS_URL": "redis-url", "DATABASE_URL": "database-url", "TASKFLOW_ADMIN_KEY": "admin-key", "OPENROUTER_API_KEY": "openrouter"} {
		if e, ok := api[v]; !ok || e.ValueFrom.SecretKeyRef.Key != key {
			t.Errorf("api %s: want key %q of taskflow-prod", v, key)
		}
	}
	if _, ok := envOf(w.Spec.Template.Spec.Containers[0])["TASKFLOW_ARTIFACT_DIR"]; ok {
		t.Errorf("worker: TASKFLOW_ARTIFACT_DIR without the volume")
	}
	// the API and the services share the artifacts volume
	for _, role := range []string{"api", "service-export"} {
		d := m.deployments[fullname+"-"+role]
		c := d.Spec.Template.Spec.Containers[0]
		if envOf(c)["TASKFLOW_ARTIFACT_DIR"].Value != "/data/artifacts" {
			t.Errorf("%s: TASKFLOW_ARTIFACT_DIR not /data/artifacts", role)
		}
		found := false
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "taskflow-artifacts" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no taskflow-artifacts volume", role)
		}
	}

	// KEDA scales the worker Deployment on the queue depth
	if len(m.scaled) != 1 || len(m.hpas) != 0 {
		t.Fatalf("%d ScaledObjects and %d HPAs, want one ScaledObject", len(m.scaled), len(m.hpas))
	}
	so := m.scaled[0]
	if so.Spec.ScaleTargetRef.Name != w.Name || so.Spec.ScaleTargetRef.Kind != "Deployment" {
		t.Errorf("ScaledObject targets %+v, want Deployment %s", so.Spec.ScaleTargetRef, w.Name)
	}
	if *so.Spec.MinReplicaCount != 1 || *so.Spec.MaxReplicaCount != 10 {
		t.Errorf("ScaledObject replicas %d..%d", *so.Spec.MinReplicaCount, *so.Spec.MaxReplicaCount)
	}
	if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "prometheus" {
		t.Fatalf("ScaledObject triggers %+v", so.Spec.Triggers)
	}
	md := so.Spec.Triggers[0].Metadata
	for k := range md {
		if !prometheusTriggerKeys[k] {
			t.Errorf("prometheus trigger: unknown metadata key %q", k)
		}
	}
	q := md["query"]
	for _, want := range []string{"taskflow_queue_depth", `queue=~"primary|retry"`, `namespace="queues"`, `service="tf-taskflow-api"`, "max by (queue)"} {
		if !strings.Contains(q, want) {
			t.Errorf("query %q lacks %s", q, want)
		}
	}
	if md["threshold"] != "50" || md["serverAddress"] == "" {
		t.Errorf("trigger metadata %v", md)
	}

	// the ServiceMonitor scrapes the API's Service with the admin key
	if len(m.monitors) != 1 {
		t.Fatalf("%d ServiceMonitors", len(m.monitors))
	}
	sm := m.monitors[0]
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	svc := m.services[fullname+"-api"]
	if !sel.Matches(labels.Set(svc.Labels)) {
		t.Errorf("ServiceMonitor selector %s misses the API Service's labels %v", sel, svc.Labels)
	}
	if sm.Labels["release"] != "prom" {
		t.Errorf("ServiceMonitor labels %v lack serviceMonitor.labels", sm.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %+v", sm.Spec.Endpoints)
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Port != svc.Spec.Ports[0].Name || ep.Path != "/metrics" {
		t.Errorf("ServiceMonitor scrapes %s %s, want port %s /metrics", ep.Port, ep.Path, svc.Spec.Ports[0].Name)
	}
	if a := ep.Authorization; a == nil || a.Type != "Bearer" || a.Credentials == nil || a.Credentials.Name != "taskflow-prod" || a.Credentials.Key != "admin-key" {
		t.Errorf("ServiceMonitor authorization %+v: want Bearer from taskflow-prod admin-key", a)
	}
}

func checkHPA(t *testing.T, m *manifests) {
	if len(m.hpas) != 1 || len(m.scaled) != 0 {
		t.Fatalf("%d HPAs and %d ScaledObjects, want one HPA", len(m.hpas), len(m.scaled))
	}
	h := m.hpas[0]
	w := m.deployments[fullname+"-worker"]
	if h.Spec.ScaleTargetRef.Name != w.Name || h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.APIVersion != "apps/v1" {
		t.Errorf("HPA targets %+v", h.Spec.ScaleTargetRef)
	}
	if w.Spec.Replicas != nil {
		t.Errorf("worker replicas set although the HPA owns the count")
	}
	if *h.Spec.MinReplicas != 2 || h.Spec.MaxReplicas != 20 {
		t.Errorf("HPA replicas %d..%d", *h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	if len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Type != autoscalingv2.ExternalMetricSourceType {
		t.Fatalf("HPA metrics %+v", h.Spec.Metrics)
	}
	ext := h.Spec.Metrics[0].External
	if ext.Metric.Name != "taskflow_queue_depth" || ext.Metric.Selector.MatchLabels["queue"] != "primary" {
		t.Errorf("HPA metric %+v", ext.Metric)
	}
	if ext.Target.Type != autoscalingv2.AverageValueMetricType || ext.Target.AverageValue.String() != "100" {
		t.Errorf("HPA target %+v, want an average of 100 per worker", ext.Target)
	}
}

func checkMinimal(t *testing.T, m *manifests) {
	if len(m.pdbs) != 0 {
		t.Errorf("%d PDBs, want none", len(m.pdbs))
	}
	c := m.deployments[fullname+"-api"].Spec.Template.Spec.Containers[0]
	if c.Lifecycle != nil {
		t.Errorf("api lifecycle %+v with preStopSleepSeconds 0", c.Lifecycle)
	}
	if len(m.all) != 3 {
		t.Errorf("%d objects, want the Secret, the API's Deployment and Service", len(m.all))
	}
}

// checkBefore130: a cluster without the preStop sleep action gets no
// preStop, and no sleep in the API's grace period.
func checkBefore130(t *testing.T, m *manifests) {
	a := m.deployments[fullname+"-api"].Spec.Template.Spec
	if a.Containers[0].Lifecycle != nil {
		t.Errorf("api lifecycle %+v on 1.29", a.Containers[0].Lifecycle)
	}
	if *a.TerminationGracePeriodSeconds != 30 {
		t.Errorf("api terminationGracePeriodSeconds %d, want 10 + 20", *a.TerminationGracePeriodSeconds)
	}
}

func checkDrain(t *testing.T, m *manifests) {
	w := m.deployments[fullname+"-worker"].Spec.Template.Spec
	if g := envOf(w.Containers[0])["TASKFLOW_SHUTDOWN_GRACE"].Value; g != "45s" {
		t.Errorf("worker TASKFLOW_SHUTDOWN_GRACE %q, want 45s", g)
	}
	if *w.TerminationGracePeriodSeconds != 60 {
		t.Errorf("worker terminationGracePeriodSeconds %d, want 45 + 15", *w.TerminationGracePeriodSeconds)
	}
	// the others keep the chart-wide drain
	if g := envOf(m.deployments[fullname+"-orchestrator"].Spec.Template.Spec.Containers[0])["TASKFLOW_SHUTDOWN_GRACE"].Value; g != "10s" {
		t.Errorf("orchestrator TASKFLOW_SHUTDOWN_GRACE %q", g)
	}
	s := m.secrets[fullname]
	want := map[string]string{
		"REDIS_URL": "rediss://redis.example.internal:6380/2", "DATABASE_URL": "postgres://taskflow@pg/taskflow",
		"TASKFLOW_ADMIN_KEY": "0123456789abcdef0123", "OPENROUTER_API_KEY": "sk-test",
	}
	for k, v := range want {
		if got := string(s.Data[k]); got != v {
			t.Errorf("Secret %s = %q, want %q", k, got, v)
		}
	}
	env := envOf(m.deployments[fullname+"-orchestrator"].Spec.Template.Spec.Containers[0])
	if e, ok := env["DATABASE_URL"]; !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Key != "DATABASE_URL" {
		t.Errorf("orchestrator does not read DATABASE_URL from the Secret")
	}
}

// TestWrongValuesFail: value sets whose mistakes reach the manifests (or
// the chart's own checks) must fail the rendering or the strict decoding.
func TestWrongValuesFail(t *testing.T) {
	ch := loadChart(t)
	for _, tc := range []struct {
		name, values string
		// skipSchema renders without values.schema.json, as
		// --skip-schema-validation does
		skipSchema bool
		want       string
	}{
		// Kubernetes objects passed through values: the strict decoding
		{name: "misspelt probe field", values: `api: {livenessProbe: {httpGet: {pth: /live, port: http}}}`, want: `unknown field "pth"`},
		{name: "misplaced probe field", values: `api: {readinessProbe: {path: /ready, httpGet: {path: /ready, port: http}}}`, want: `unknown field "path"`},
		{name: "env entry misspelt", values: `worker: {env: [{name: LOG_LEVEL, valeu: debug}]}`, want: `unknown field "valeu"`},
		{name: "capitalised field", values: `securityContext: {ReadOnlyRootFilesystem: true}`, want: `ReadOnlyRootFilesystem`},
		{name: "uid as a name", values: `podSecurityContext: {runAsUser: nobody}`, want: "cannot unmarshal string"},
		{name: "quantity not a quantity", values: `worker: {resources: {requests: {cpu: lots}}}`, want: "quantities must match"},
		{name: "resources misspelt", values: `orchestrator: {resources: {request: {cpu: 100m}}}`, want: `unknown field "request"`},
		{name: "toleration field misspelt", values: `worker: {tolerations: [{key: spot, operater: Exists}]}`, want: `unknown field "operater"`},
		// the chart's own settings: values.schema.json
		{name: "chart setting misspelt", values: `worker: {concurency: 20}`, want: "'/worker': additional properties 'concurency' not allowed"},
		{name: "unknown service", values: `services: {names: [reports]}`, want: "/services/names/0"},
		{name: "annotations as a list", values: `api: {podAnnotations: [a, b]}`, want: "'/api/podAnnotations': got array, want object"},
		{name: "autoscaler kind unknown", values: `autoscaling: {enabled: true, kind: vpa}`, want: "'/autoscaling/kind': value must be one of"},
		{name: "HPA selector value a list", values: `autoscaling: {enabled: true, kind: hpa, hpa: {selector: {queue: [primary]}}}`, want: "'/autoscaling/hpa/selector/queue': got array, want string"},
		{name: "no drain", values: `shutdownGraceSeconds: 0`, want: "'/shutdownGraceSeconds'"},
		// ... and without the schema, the templates and the decoding
		{name: "annotations as a list, no schema", skipSchema: true, values: `api: {podAnnotations: [a, b]}`, want: "YAML"},
		{name: "autoscaler kind unknown, no schema", skipSchema: true, values: `autoscaling: {enabled: true, kind: vpa}`, want: `autoscaling.kind "vpa"`},
		{name: "HPA selector value a list, no schema", skipSchema: true, values: `autoscaling: {enabled: true, kind: hpa, hpa: {selector: {queue: [primary]}}}`, want: "cannot unmarshal array"},
		// what the chart derives, env must not override
		{name: "drain set in env", values: `worker: {env: [{name: TASKFLOW_SHUTDOWN_GRACE, value: 60s}]}`, want: "env TASKFLOW_SHUTDOWN_GRACE: set by the chart"},
		{name: "API address set in env", values: `env: [{name: TASKFLOW_ADDR, value: ":9090"}]`, want: "env TASKFLOW_ADDR: set by the chart"},
		// the chart's checks of the Secret's values
		{name: "admin key too short", values: `secret: {values: {TASKFLOW_ADMIN_KEY: short}}`, want: "at least 16 characters"},
		{name: "no Redis", values: `secret: {values: {REDIS_URL: ""}}`, want: "REDIS_URL is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := renderSchema(ch, vals(t, tc.values), tc.skipSchema)
			if err == nil {
				_, err = decodeAll(files)
			}
			if err == nil {
				t.Fatalf("rendered and decoded without an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant one containing %q", err.Error(), tc.want)
			}
		})
	}
}

// TestUnknownKindFails: the decoder refuses a kind it has no type for,
// so a new template cannot slip past the strict decoding.
func TestUnknownKindFails(t *testing.T) {
	_, err := decodeStrict([]byte("apiVersion: v1\nkind: ConfigMpa\nmetadata: {name: x}\n"))
	if err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Fatalf("err = %v, want unknown kind", err)
	}
	_, err = decodeStrict([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: 1}]}\nspec: {}\n"))
	if err == nil {
		t.Fatalf("a duplicate key decoded")
	}
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	return env
}

// secretNameOf is the Secret the pods should read: the chart's, or
// (none rendered) the existing one the everything set names.
func secretNameOf(m *manifests) string {
	for name := range m.secrets {
		return name
	}
	return "taskflow-prod"
}

// secretsOnly is a ClientProvider for the engine's lookup: a cluster
// holding the given Secrets, as helm upgrade sees it.
type secretsOnly struct {
	client *dynamicfake.FakeDynamicClient
}

func (p secretsOnly) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	if apiVersion != "v1" || kind != "Secret" {
		return nil, false, fmt.Errorf("lookup of %s %s: the test cluster holds Secrets only", apiVersion, kind)
	}
	return p.client.Resource(corev1.SchemeGroupVersion.WithResource("secrets")), true, nil
}

// TestAdminKeyKeptAcrossUpgrades: an empty secret.values.TASKFLOW_ADMIN_KEY
// makes a random key at install and reads the cluster's back at upgrade
// (lookup), so an upgrade never changes the admin key under its users.
func TestAdminKeyKeptAcrossUpgrades(t *testing.T) {
	ch := loadChart(t)
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	renderWith := func(objs ...runtime.Object) *corev1.Secret {
		t.Helper()
		top, err := chartutil.ToRenderValues(ch, nil, chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, IsUpgrade: len(objs) > 0}, nil)
		if err != nil {
			t.Fatal(err)
		}
		files, err := engine.RenderWithClientProvider(ch, top, secretsOnly{dynamicfake.NewSimpleDynamicClient(scheme, objs...)})
		if err != nil {
			t.Fatalf("render: %v", err)
		}
		m, err := decodeAll(files)
		if err != nil {
			t.Fatal(err)
		}
		s := m.secrets[fullname]
		if s == nil {
			t.Fatalf("no Secret %s", fullname)
		}
		return s
	}

	installed := renderWith()
	key := string(installed.Data["TASKFLOW_ADMIN_KEY"])
	if len(key) != 32 {
		t.Fatalf("install: admin key %q, want 32 random characters", key)
	}
	if again := string(renderWith().Data["TASKFLOW_ADMIN_KEY"]); again == key {
		t.Errorf("two installs made the same key %q", key)
	}
	existing := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: fullname, Namespace: namespace},
		Data:       map[string][]byte{"TASKFLOW_ADMIN_KEY": []byte(key), "REDIS_URL": installed.Data["REDIS_URL"]},
	}
	if got := string(renderWith(existing).Data["TASKFLOW_ADMIN_KEY"]); got != key {
		t.Errorf("upgrade: admin key %q, want the installed %q", got, key)
	}
}
