package helm

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The two custom resources the chart may render are not in k8s.io/api.
// Rather than pull the Prometheus Operator's and KEDA's modules (and
// their controller-runtime trees) into this module, these types model
// the part of each CRD's schema the chart uses, with the CRDs' own field
// names: strict decoding into them catches a misspelt or misplaced field
// the chart writes, but a field the real CRD has and these types leave
// out fails here too (add it when the chart starts writing it).

// ServiceMonitor is monitoring.coreos.com/v1 ServiceMonitor (Prometheus
// Operator), as far as the chart uses it.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ServiceMonitorSpec `json:"spec"`
}

type ServiceMonitorSpec struct {
	Selector          metav1.LabelSelector `json:"selector"`
	NamespaceSelector *struct {
		Any        bool     `json:"any,omitempty"`
		MatchNames []string `json:"matchNames,omitempty"`
	} `json:"namespaceSelector,omitempty"`
	JobLabel  string     `json:"jobLabel,omitempty"`
	Endpoints []Endpoint `json:"endpoints"`
}

// Endpoint is one scraped port of a ServiceMonitor.
type Endpoint struct {
	Port          string             `json:"port,omitempty"`
	Path          string             `json:"path,omitempty"`
	Scheme        string             `json:"scheme,omitempty"`
	Interval      string             `json:"interval,omitempty"`
	ScrapeTimeout string             `json:"scrapeTimeout,omitempty"`
	Authorization *SafeAuthorization `json:"authorization,omitempty"`
	HonorLabels   bool               `json:"honorLabels,omitempty"`
}

// SafeAuthorization is the endpoint's Authorization header, its
// credentials read from a Secret of the ServiceMonitor's namespace.
type SafeAuthorization struct {
	Type        string                    `json:"type,omitempty"`
	Credentials *corev1.SecretKeySelector `json:"credentials,omitempty"`
}

// ScaledObject is keda.sh/v1alpha1 ScaledObject (KEDA), as far as the
// chart uses it.
type ScaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ScaledObjectSpec `json:"spec"`
}

type ScaledObjectSpec struct {
	ScaleTargetRef  ScaleTarget    `json:"scaleTargetRef"`
	PollingInterval *int32         `json:"pollingInterval,omitempty"`
	CooldownPeriod  *int32         `json:"cooldownPeriod,omitempty"`
	MinReplicaCount *int32         `json:"minReplicaCount,omitempty"`
	MaxReplicaCount *int32         `json:"maxReplicaCount,omitempty"`
	Triggers        []ScaleTrigger `json:"triggers"`
}

type ScaleTarget struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name"`
}

// ScaleTrigger is one of a ScaledObject's triggers. Its metadata is a
// free map in the CRD; prometheusTriggerKeys says which keys KEDA's
// prometheus scaler reads, and the test refuses others.
type ScaleTrigger struct {
	Type     string            `json:"type"`
	Name     string            `json:"name,omitempty"`
	Metadata map[string]string `json:"metadata"`
}

// prometheusTriggerKeys are the metadata keys of KEDA's prometheus
// scaler that the chart may set.
var prometheusTriggerKeys = map[string]bool{
	"serverAddress": true, "query": true, "threshold": true, "activationThreshold": true,
	"namespace": true, "customHeaders": true, "ignoreNullValues": true, "unsafeSsl": true,
	"queryParameters": true, "authModes": true,
}
