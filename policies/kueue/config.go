package kueue

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// The API group of Kueue's controller Configuration (apis/config).
const (
	configV1beta1 = "config.kueue.x-k8s.io/v1beta1"
	configV1beta2 = "config.kueue.x-k8s.io/v1beta2"
)

// Fair-sharing preemption strategies (Configuration fairSharing.preemptionStrategies).
const (
	StrategyLessThanOrEqualToFinalShare = "LessThanOrEqualToFinalShare"
	StrategyLessThanInitialShare        = "LessThanInitialShare"
)

// Requeue timestamps (waitForPodsReady.requeuingStrategy.timestamp).
const (
	TimestampEviction = "Eviction"
	TimestampCreation = "Creation"
)

// Defaults of Kueue's Configuration (apis/config/v1beta1 and v1beta2 defaults.go).
const (
	DefaultPodsReadyTimeoutV1beta1 = 5 * sim.Minute  // v1beta1 waitForPodsReady.timeout
	DefaultPodsReadyTimeoutV1beta2 = 30 * sim.Minute // v1beta2 waitForPodsReady.timeout
	DefaultBackoffBaseSeconds      = 60
	DefaultBackoffMaxSeconds       = 3600
	DefaultUsageSamplingInterval   = 5 * sim.Minute
)

// Config is the part of Kueue's Configuration object (kind Configuration,
// apiVersion config.kueue.x-k8s.io/v1beta1 or v1beta2) that the simulator uses,
// with the version's defaults applied. A nil block means the feature is off.
type Config struct {
	APIVersion           string
	FairSharing          *FairSharingConfig
	AdmissionFairSharing *AdmissionFairSharingConfig
	WaitForPodsReady     *PodsReadyConfig
}

// FairSharingConfig turns on fair sharing (DRS ordering of heads, fair preemption).
type FairSharingConfig struct {
	// PreemptionStrategies in order (default [LessThanOrEqualToFinalShare,
	// LessThanInitialShare]).
	PreemptionStrategies []string
}

// AdmissionFairSharingConfig turns on Admission Fair Sharing for ClusterQueues
// with admissionScope.admissionMode UsageBasedAdmissionFairSharing.
type AdmissionFairSharingConfig struct {
	UsageHalfLifeTime     sim.Duration       // 0: usage is forgotten at every sample
	UsageSamplingInterval sim.Duration       // default 5 min
	ResourceWeights       map[string]float64 // default 1 per resource
}

// PodsReadyConfig is waitForPodsReady.
type PodsReadyConfig struct {
	Timeout            sim.Duration // v1beta1 default 5 min, v1beta2 30 min
	BlockAdmission     bool         // v1beta1 default true (when enabled), v1beta2 false
	Timestamp          string       // Eviction (default) or Creation
	BackoffLimitCount  *int32       // nil: requeue forever
	BackoffBaseSeconds int32        // default 60
	BackoffMaxSeconds  int32        // default 3600
	RecoveryTimeout    sim.Duration // v1beta1 default none (0), v1beta2 default = Timeout; read, no effect (see docs)
}

// Backoff is the requeue delay after the n-th PodsReady timeout (n >= 1):
// base * 2^(n-1) seconds capped at max (Kueue adds a small random jitter, which the
// simulator leaves out so runs are reproducible).
func (c *PodsReadyConfig) Backoff(n int32) sim.Duration {
	base, maxS := float64(c.BackoffBaseSeconds), float64(c.BackoffMaxSeconds)
	d := base * math.Pow(2, float64(max(n, 1)-1))
	return sim.Seconds(min(d, maxS))
}

type rawRequeuing struct {
	Timestamp          *string `yaml:"timestamp"`
	BackoffLimitCount  *int32  `yaml:"backoffLimitCount"`
	BackoffBaseSeconds *int32  `yaml:"backoffBaseSeconds"`
	BackoffMaxSeconds  *int32  `yaml:"backoffMaxSeconds"`
}

type rawPodsReady struct {
	Enable            *bool         `yaml:"enable"` // v1beta1 only
	Timeout           *string       `yaml:"timeout"`
	BlockAdmission    *bool         `yaml:"blockAdmission"`
	RequeuingStrategy *rawRequeuing `yaml:"requeuingStrategy"`
	RecoveryTimeout   *string       `yaml:"recoveryTimeout"`
}

type rawFairSharing struct {
	Enable               *bool    `yaml:"enable"` // v1beta1 only
	PreemptionStrategies []string `yaml:"preemptionStrategies"`
}

type rawAFS struct {
	UsageHalfLifeTime     *string            `yaml:"usageHalfLifeTime"`
	UsageSamplingInterval *string            `yaml:"usageSamplingInterval"`
	ResourceWeights       map[string]float64 `yaml:"resourceWeights"`
}

// rawConfiguration lists every top-level field of Kueue's Configuration. The
// yaml.Node fields are accepted (any content) and reported as not simulated.
type rawConfiguration struct {
	APIVersion           string          `yaml:"apiVersion"`
	Kind                 string          `yaml:"kind"`
	FairSharing          *rawFairSharing `yaml:"fairSharing"`
	AdmissionFairSharing *rawAFS         `yaml:"admissionFairSharing"`
	WaitForPodsReady     *rawPodsReady   `yaml:"waitForPodsReady"`

	Namespace                    yaml.Node `yaml:"namespace"`
	ManageJobsWithoutQueueName   yaml.Node `yaml:"manageJobsWithoutQueueName"`
	ManagedJobsNamespaceSelector yaml.Node `yaml:"managedJobsNamespaceSelector"`
	InternalCertManagement       yaml.Node `yaml:"internalCertManagement"`
	ClientConnection             yaml.Node `yaml:"clientConnection"`
	Integrations                 yaml.Node `yaml:"integrations"`
	MultiKueue                   yaml.Node `yaml:"multiKueue"`
	Resources                    yaml.Node `yaml:"resources"`
	FeatureGates                 yaml.Node `yaml:"featureGates"`
	ObjectRetentionPolicies      yaml.Node `yaml:"objectRetentionPolicies"`
	QueueVisibility              yaml.Node `yaml:"queueVisibility"`
	VisibilityServer             yaml.Node `yaml:"visibilityServer"`
	Webhook                      yaml.Node `yaml:"webhook"`
	LeaderElection               yaml.Node `yaml:"leaderElection"`
	Metrics                      yaml.Node `yaml:"metrics"`
	Health                       yaml.Node `yaml:"health"`
	PprofBindAddress             yaml.Node `yaml:"pprofBindAddress"`
	Controller                   yaml.Node `yaml:"controller"`
	TLS                          yaml.Node `yaml:"tls"`
}

// kindOf returns a YAML object's apiVersion and kind.
func kindOf(root *yaml.Node) (api, kind string) {
	if root.Kind != yaml.MappingNode {
		return "", ""
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "kind":
			kind = root.Content[i+1].Value
		case "apiVersion":
			api = root.Content[i+1].Value
		}
	}
	return api, kind
}

// isConfiguration reports whether a YAML document is a Kueue Configuration, or a
// Kubernetes ConfigMap (which may carry one, as Kueue's kueue-manager-config
// does).
func isConfiguration(root *yaml.Node) bool {
	api, kind := kindOf(root)
	return kind == "Configuration" && strings.HasPrefix(api, "config.kueue.x-k8s.io/") || kind == "ConfigMap" && api == "v1"
}

// addConfiguration reads a Configuration document: unknown fields are errors
// (file:line and field), fields that are not simulated are warnings. A ConfigMap
// is searched for data entries holding a Configuration (Kueue's
// kueue-manager-config, key controller_manager_config.yaml); one without any is
// ignored with a warning.
func (m *Manifests) addConfiguration(file string, root *yaml.Node) error {
	if _, kind := kindOf(root); kind == "ConfigMap" {
		return m.addConfigMap(file, root)
	}
	where := fmt.Sprintf("%s:%d", file, root.Line)
	var raw rawConfiguration
	var errs []error
	for _, e := range policies.CheckFields(root, &raw) {
		errs = append(errs, located(file, "Configuration", "", e))
	}
	if err := root.Decode(&raw); err != nil {
		errs = append(errs, yamlErrs(file, "Configuration", "", root, err)...)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if raw.APIVersion != configV1beta1 && raw.APIVersion != configV1beta2 {
		return fmt.Errorf("%s: Configuration: apiVersion %q (want %s or %s)", where, raw.APIVersion, configV1beta1, configV1beta2)
	}
	v1 := raw.APIVersion == configV1beta1
	if !v1 {
		// v1beta2 dropped the enable switches (the raw struct has them for v1beta1).
		if raw.FairSharing != nil && raw.FairSharing.Enable != nil {
			errs = append(errs, fmt.Errorf("%s: Configuration: fairSharing.enable: unknown field in %s (the block's presence turns fair sharing on)", where, configV1beta2))
		}
		if raw.WaitForPodsReady != nil && raw.WaitForPodsReady.Enable != nil {
			errs = append(errs, fmt.Errorf("%s: Configuration: waitForPodsReady.enable: unknown field in %s (the block's presence turns it on)", where, configV1beta2))
		}
	}
	if prev, dup := m.sources["Configuration/"]; dup {
		errs = append(errs, fmt.Errorf("%s: duplicate Configuration (first at %s)", where, prev))
	}
	m.sources["Configuration/"] = where
	c := &Config{APIVersion: raw.APIVersion}
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: Configuration: %s: %s", where, field, fmt.Sprintf(format, args...)))
	}
	dur := func(field string, s *string, def sim.Duration) sim.Duration {
		if s == nil {
			return def
		}
		d, err := time.ParseDuration(strings.TrimSpace(*s))
		if err != nil || d < 0 {
			bad(field, "invalid duration %q (want e.g. 5m, 168h)", *s)
			return def
		}
		return sim.Duration(d / time.Microsecond)
	}

	if fs := raw.FairSharing; fs != nil && (!v1 || fs.Enable != nil && *fs.Enable) {
		st := fs.PreemptionStrategies
		if len(st) == 0 {
			st = []string{StrategyLessThanOrEqualToFinalShare, StrategyLessThanInitialShare}
		}
		for i, s := range st {
			if s != StrategyLessThanOrEqualToFinalShare && s != StrategyLessThanInitialShare {
				bad(fmt.Sprintf("fairSharing.preemptionStrategies[%d]", i), "%q (want %s or %s)", s, StrategyLessThanOrEqualToFinalShare, StrategyLessThanInitialShare)
			}
		}
		if len(st) > 2 || len(st) == 2 && (st[0] != StrategyLessThanOrEqualToFinalShare || st[1] != StrategyLessThanInitialShare) {
			bad("fairSharing.preemptionStrategies", "%v: Kueue accepts one strategy or [%s, %s]", st, StrategyLessThanOrEqualToFinalShare, StrategyLessThanInitialShare)
		}
		c.FairSharing = &FairSharingConfig{PreemptionStrategies: st}
	}

	if a := raw.AdmissionFairSharing; a != nil {
		afs := &AdmissionFairSharingConfig{
			UsageHalfLifeTime:     dur("admissionFairSharing.usageHalfLifeTime", a.UsageHalfLifeTime, 0),
			UsageSamplingInterval: dur("admissionFairSharing.usageSamplingInterval", a.UsageSamplingInterval, DefaultUsageSamplingInterval),
			ResourceWeights:       map[string]float64{},
		}
		if afs.UsageSamplingInterval == 0 {
			afs.UsageSamplingInterval = DefaultUsageSamplingInterval // Kueue defaults a zero interval too
		}
		if a.UsageHalfLifeTime == nil {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s: Configuration: admissionFairSharing.usageHalfLifeTime is not set: 0 means LocalQueue usage is forgotten at every sample", where))
		}
		for _, r := range slices.Sorted(maps.Keys(a.ResourceWeights)) {
			w := a.ResourceWeights[r]
			if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
				bad("admissionFairSharing.resourceWeights."+r, "%v must be a finite number >= 0", w)
			}
			if r != ResGPU && r != ResCPU && r != ResMemory {
				m.Warnings = append(m.Warnings, fmt.Sprintf("%s: Configuration: admissionFairSharing.resourceWeights.%s: gpusim jobs request only %s, %s and %s", where, r, ResGPU, ResCPU, ResMemory))
			}
			afs.ResourceWeights[r] = w
		}
		c.AdmissionFairSharing = afs
	}

	if pr := raw.WaitForPodsReady; pr != nil && (!v1 || pr.Enable != nil && *pr.Enable) {
		defTimeout := DefaultPodsReadyTimeoutV1beta2
		if v1 {
			defTimeout = DefaultPodsReadyTimeoutV1beta1
		}
		p := &PodsReadyConfig{Timeout: dur("waitForPodsReady.timeout", pr.Timeout, defTimeout),
			Timestamp: TimestampEviction, BackoffBaseSeconds: DefaultBackoffBaseSeconds, BackoffMaxSeconds: DefaultBackoffMaxSeconds}
		if p.Timeout == 0 {
			if v1 {
				bad("waitForPodsReady.timeout", "must be > 0")
			}
			p.Timeout = defTimeout // v1beta2 defaults a zero timeout
		}
		// v1beta1 defaults blockAdmission to true when waitForPodsReady is enabled;
		// v1beta2 to false.
		p.BlockAdmission = v1
		if pr.BlockAdmission != nil {
			p.BlockAdmission = *pr.BlockAdmission
		}
		if v1 {
			p.RecoveryTimeout = dur("waitForPodsReady.recoveryTimeout", pr.RecoveryTimeout, 0)
		} else {
			p.RecoveryTimeout = dur("waitForPodsReady.recoveryTimeout", pr.RecoveryTimeout, p.Timeout)
		}
		if rs := pr.RequeuingStrategy; rs != nil {
			if rs.Timestamp != nil {
				if *rs.Timestamp != TimestampEviction && *rs.Timestamp != TimestampCreation {
					bad("waitForPodsReady.requeuingStrategy.timestamp", "%q (want %s or %s)", *rs.Timestamp, TimestampEviction, TimestampCreation)
				}
				p.Timestamp = *rs.Timestamp
			}
			if rs.BackoffLimitCount != nil {
				if *rs.BackoffLimitCount < 0 {
					bad("waitForPodsReady.requeuingStrategy.backoffLimitCount", "%d must be >= 0", *rs.BackoffLimitCount)
				}
				n := *rs.BackoffLimitCount
				p.BackoffLimitCount = &n
			}
			if rs.BackoffBaseSeconds != nil {
				if *rs.BackoffBaseSeconds < 0 {
					bad("waitForPodsReady.requeuingStrategy.backoffBaseSeconds", "%d must be >= 0", *rs.BackoffBaseSeconds)
				}
				p.BackoffBaseSeconds = *rs.BackoffBaseSeconds
			}
			if rs.BackoffMaxSeconds != nil {
				if *rs.BackoffMaxSeconds < 0 {
					bad("waitForPodsReady.requeuingStrategy.backoffMaxSeconds", "%d must be >= 0", *rs.BackoffMaxSeconds)
				}
				p.BackoffMaxSeconds = *rs.BackoffMaxSeconds
			}
		}
		c.WaitForPodsReady = p
	}

	for _, f := range []struct {
		n    yaml.Node
		name string
	}{{raw.Namespace, "namespace"}, {raw.ManageJobsWithoutQueueName, "manageJobsWithoutQueueName"},
		{raw.ManagedJobsNamespaceSelector, "managedJobsNamespaceSelector"}, {raw.InternalCertManagement, "internalCertManagement"},
		{raw.ClientConnection, "clientConnection"}, {raw.Integrations, "integrations"}, {raw.MultiKueue, "multiKueue"},
		{raw.Resources, "resources"}, {raw.FeatureGates, "featureGates (gpusim uses the feature-gate defaults listed in docs/kueue.md)"},
		{raw.ObjectRetentionPolicies, "objectRetentionPolicies"}, {raw.QueueVisibility, "queueVisibility"},
		{raw.VisibilityServer, "visibilityServer"}, {raw.Webhook, "webhook"}, {raw.LeaderElection, "leaderElection"},
		{raw.Metrics, "metrics"}, {raw.Health, "health"}, {raw.PprofBindAddress, "pprofBindAddress"},
		{raw.Controller, "controller"}, {raw.TLS, "tls"}} {
		if f.n.Kind != 0 {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s: Configuration: %s is not simulated", where, f.name))
		}
	}
	if v1 && raw.FairSharing != nil && c.FairSharing == nil {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%s: Configuration: fairSharing.enable is false: fair sharing is off", where))
	}
	if v1 && raw.WaitForPodsReady != nil && c.WaitForPodsReady == nil {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%s: Configuration: waitForPodsReady.enable is false: waitForPodsReady is off", where))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	m.Config = c
	return nil
}

// parseWeight parses a fairSharing.weight (a Kubernetes quantity such as "2",
// "0.5" or "500m") as a float.
func parseWeight(s string) (float64, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	for _, x := range []struct {
		suf string
		m   float64
	}{{"m", 1e-3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}} {
		if strings.HasSuffix(s, x.suf) {
			s, mult = strings.TrimSuffix(s, x.suf), x.m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("invalid weight %q (want a quantity >= 0, e.g. 2 or 500m)", s)
	}
	return v * mult, nil
}

// checkFairSharingFields validates fairSharing weights and admissionScope on
// ClusterQueues, Cohorts and LocalQueues, and warns when they are set but the
// Configuration does not turn the feature on.
func (m *Manifests) checkFairSharingFields(add func(where, format string, args ...any)) {
	fsOn := m.Config != nil && m.Config.FairSharing != nil
	afsOn := m.Config != nil && m.Config.AdmissionFairSharing != nil
	weight := func(where, obj string, fs *FairSharing, on bool, feature string) {
		if fs == nil {
			return
		}
		if fs.Weight != "" {
			if _, err := parseWeight(fs.Weight); err != nil {
				add(where, "%s: fairSharing.weight: %v", obj, err)
			}
		}
		if !on {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s: %s: fairSharing is ignored: %s", where, obj, feature))
		}
	}
	const noFS = "no Kueue Configuration with fairSharing in the manifests (classical ordering and preemption are used)"
	for _, name := range slices.Sorted(maps.Keys(m.ClusterQueues)) {
		s := m.ClusterQueues[name]
		where := m.sources["ClusterQueue/"+name]
		weight(where, fmt.Sprintf("ClusterQueue %q", name), s.FairSharing, fsOn, noFS)
		if p := s.Preemption; fsOn && p != nil && p.BorrowWithinCohort != nil && p.BorrowWithinCohort.Policy != "" && p.BorrowWithinCohort.Policy != "Never" {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s: ClusterQueue %q: preemption.borrowWithinCohort is ignored with fair sharing (Kueue does not use it there)", where, name))
		}
		if sc := s.AdmissionScope; sc != nil {
			switch sc.AdmissionMode {
			case "UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing":
			default:
				add(where, "ClusterQueue %q: admissionScope.admissionMode %q (want UsageBasedAdmissionFairSharing or NoAdmissionFairSharing)", name, sc.AdmissionMode)
			}
			if sc.AdmissionMode == "UsageBasedAdmissionFairSharing" && !afsOn {
				m.Warnings = append(m.Warnings, fmt.Sprintf("%s: ClusterQueue %q: admissionScope is ignored: no Kueue Configuration with admissionFairSharing in the manifests", where, name))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Cohorts)) {
		weight(m.sources["Cohort/"+name], fmt.Sprintf("Cohort %q", name), m.Cohorts[name].FairSharing, fsOn, noFS)
	}
	for _, key := range slices.Sorted(maps.Keys(m.LocalQueues)) {
		weight(fmt.Sprintf("LocalQueue %q", key), fmt.Sprintf("LocalQueue %q", key), m.LocalQueues[key].FairSharing, afsOn,
			"LocalQueue weights are used only by Admission Fair Sharing, which no Kueue Configuration turns on")
	}
}

// weightOf returns a fairSharing weight (default 1; validated by the manifests).
func weightOf(fs *FairSharing) float64 {
	if fs == nil || fs.Weight == "" {
		return 1
	}
	w, _ := parseWeight(fs.Weight)
	return w
}

// addConfigMap reads the Configurations a ConfigMap carries in its data values.
func (m *Manifests) addConfigMap(file string, root *yaml.Node) error {
	var cm struct {
		Metadata meta              `yaml:"metadata"`
		Data     map[string]string `yaml:"data"`
	}
	where := fmt.Sprintf("%s:%d", file, root.Line)
	if err := root.Decode(&cm); err != nil {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%s: ignored ConfigMap (%v)", where, err))
		return nil
	}
	found := false
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(cm.Data[key]), &doc) != nil || len(doc.Content) == 0 {
			continue
		}
		if api, kind := kindOf(doc.Content[0]); kind != "Configuration" || !strings.HasPrefix(api, "config.kueue.x-k8s.io/") {
			continue
		}
		found = true
		if err := m.addConfiguration(fmt.Sprintf("%s: ConfigMap %q data.%s", where, cm.Metadata.Name, key), doc.Content[0]); err != nil {
			errs = append(errs, err)
		}
	}
	if !found {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%s: ignored ConfigMap %q (no Kueue Configuration in its data)", where, cm.Metadata.Name))
	}
	return errors.Join(errs...)
}
