package kueue

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpusim/gpusim/sim"
)

const oneQueue = `
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q}
spec: {clusterQueue: cq}
`

func ptr32(n int32) *int32 { return &n }

// The version-dependent defaults: v1beta1 needs enable: true and defaults the
// PodsReady timeout to 5 min, blockAdmission to true and recoveryTimeout to none;
// v1beta2 turns a feature on by the block's presence and defaults the timeout to
// 30 min, blockAdmission to false and recoveryTimeout to the timeout.
func TestConfigurationDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       Config
	}{
		{"v1beta1", `
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
fairSharing: {enable: true}
waitForPodsReady: {enable: true}
admissionFairSharing: {usageHalfLifeTime: 168h}
`, Config{APIVersion: configV1beta1,
			FairSharing:          &FairSharingConfig{PreemptionStrategies: []string{StrategyLessThanOrEqualToFinalShare, StrategyLessThanInitialShare}},
			AdmissionFairSharing: &AdmissionFairSharingConfig{UsageHalfLifeTime: 168 * sim.Hour, UsageSamplingInterval: 5 * sim.Minute, ResourceWeights: map[string]float64{}},
			WaitForPodsReady: &PodsReadyConfig{Timeout: 5 * sim.Minute, BlockAdmission: true, Timestamp: TimestampEviction,
				BackoffBaseSeconds: 60, BackoffMaxSeconds: 3600}}},
		{"v1beta2", `
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing: {}
waitForPodsReady: {}
`, Config{APIVersion: configV1beta2,
			FairSharing: &FairSharingConfig{PreemptionStrategies: []string{StrategyLessThanOrEqualToFinalShare, StrategyLessThanInitialShare}},
			WaitForPodsReady: &PodsReadyConfig{Timeout: 30 * sim.Minute, Timestamp: TimestampEviction,
				BackoffBaseSeconds: 60, BackoffMaxSeconds: 3600, RecoveryTimeout: 30 * sim.Minute}}},
		{"v1beta1-off", `
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
fairSharing: {enable: false}
waitForPodsReady: {enable: false, timeout: 10m}
`, Config{APIVersion: configV1beta1}},
		{"explicit", `
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing: {preemptionStrategies: [LessThanInitialShare]}
admissionFairSharing:
  usageHalfLifeTime: 1h
  usageSamplingInterval: 30s
  resourceWeights: {nvidia.com/gpu: 10, cpu: 0.5}
waitForPodsReady:
  timeout: 2m
  blockAdmission: true
  recoveryTimeout: 0s
  requeuingStrategy: {timestamp: Creation, backoffLimitCount: 3, backoffBaseSeconds: 10, backoffMaxSeconds: 100}
`, Config{APIVersion: configV1beta2,
			FairSharing:          &FairSharingConfig{PreemptionStrategies: []string{StrategyLessThanInitialShare}},
			AdmissionFairSharing: &AdmissionFairSharingConfig{UsageHalfLifeTime: sim.Hour, UsageSamplingInterval: 30 * sim.Second, ResourceWeights: map[string]float64{"nvidia.com/gpu": 10, "cpu": 0.5}},
			WaitForPodsReady: &PodsReadyConfig{Timeout: 2 * sim.Minute, BlockAdmission: true, Timestamp: TimestampCreation,
				BackoffLimitCount: ptr32(3), BackoffBaseSeconds: 10, BackoffMaxSeconds: 100}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseManifests("m.yaml", []byte(oneQueue+"---"+tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, *m.Config); d != "" {
				t.Errorf("config (-want +got):\n%s", d)
			}
		})
	}
}

// Backoff is 60 s * 2^(n-1) capped at 3600 s.
func TestPodsReadyBackoff(t *testing.T) {
	c := &PodsReadyConfig{BackoffBaseSeconds: 60, BackoffMaxSeconds: 3600}
	want := []float64{60, 120, 240, 480, 960, 1920, 3600, 3600}
	for n, w := range want {
		if got := c.Backoff(int32(n + 1)).Seconds(); got != w {
			t.Errorf("backoff(%d) = %v, want %v", n+1, got, w)
		}
	}
}

func TestConfigurationErrorsAndWarnings(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nwaitForPodsReady:\n  enable: true\n  timout: 5m\n", "waitForPodsReady.timout: unknown field"},
		{"apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfooBar: 1\n", "fooBar: unknown field"},
		{"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfairSharing: {enable: true}\n", "fairSharing.enable: unknown field in config.kueue.x-k8s.io/v1beta2"},
		{"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwaitForPodsReady: {enable: true}\n", "waitForPodsReady.enable: unknown field"},
		{"apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing: {enable: true, preemptionStrategies: [Fairest]}\n", `fairSharing.preemptionStrategies[0]: "Fairest"`},
		{"apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing: {enable: true, preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]}\n", "Kueue accepts one strategy or"},
		{"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwaitForPodsReady: {timeout: soon}\n", `waitForPodsReady.timeout: invalid duration "soon"`},
		{"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwaitForPodsReady: {requeuingStrategy: {timestamp: Now}}\n", `requeuingStrategy.timestamp: "Now"`},
		{"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nadmissionFairSharing: {usageHalfLifeTime: 1h, resourceWeights: {cpu: -1}}\n", "resourceWeights.cpu: -1 must be"},
		{"apiVersion: config.kueue.x-k8s.io/v1alpha9\nkind: Configuration\n", `apiVersion "config.kueue.x-k8s.io/v1alpha9"`},
		{"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n---\napiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n", "duplicate Configuration"},
		{"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c}\nspec: {fairSharing: {weight: heavy}}\n", `Cohort "c": fairSharing.weight: invalid weight "heavy"`},
		{"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq2}\nspec: {admissionScope: {admissionMode: Fair}}\n", `admissionScope.admissionMode "Fair"`},
	} {
		_, err := ParseManifests("m.yaml", []byte(oneQueue+"---\n"+tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want error containing %q, got %v", tc.want, err)
		}
	}
	m, err := ParseManifests("m.yaml", []byte(oneQueue+`---
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
namespace: kueue-system
integrations: {frameworks: [batch/job]}
featureGates: {TopologyAwareScheduling: true}
fairSharing: {enable: false}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq2}
spec:
  fairSharing: {weight: "2"}
  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}
`))
	if err != nil {
		t.Fatal(err)
	}
	ws := strings.Join(m.Warnings, "\n")
	for _, want := range []string{"namespace is not simulated", "integrations is not simulated", "featureGates", "fairSharing.enable is false",
		`ClusterQueue "cq2": fairSharing is ignored`, `ClusterQueue "cq2": admissionScope is ignored`} {
		if !strings.Contains(ws, want) {
			t.Errorf("want a warning containing %q in\n%s", want, ws)
		}
	}
}

// Kueue's own deployment keeps the Configuration in the kueue-manager-config
// ConfigMap: it is read from there; errors name the ConfigMap and data key;
// another ConfigMap is ignored with a warning.
func TestConfigurationInConfigMap(t *testing.T) {
	cm := func(body string) string {
		return oneQueue + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config, namespace: kueue-system}\ndata:\n  controller_manager_config.yaml: |\n    apiVersion: config.kueue.x-k8s.io/v1beta1\n    kind: Configuration\n" + body
	}
	m, err := ParseManifests("m.yaml", []byte(cm("    waitForPodsReady:\n      enable: true\n      timeout: 2m\n")))
	if err != nil {
		t.Fatal(err)
	}
	if m.Config == nil || m.Config.WaitForPodsReady == nil || m.Config.WaitForPodsReady.Timeout != 2*sim.Minute {
		t.Errorf("config from the ConfigMap: %+v", m.Config)
	}
	_, err = ParseManifests("m.yaml", []byte(cm("    fairSharing: {enabel: true}\n")))
	if want := `ConfigMap "kueue-manager-config" data.controller_manager_config.yaml:3: Configuration: fairSharing.enabel: unknown field`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("want error containing %q, got %v", want, err)
	}
	m, err = ParseManifests("m.yaml", []byte(oneQueue+"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {a: b}\n"))
	if err != nil || m.Config != nil || !strings.Contains(strings.Join(m.Warnings, "\n"), `ignored ConfigMap "other"`) {
		t.Errorf("other ConfigMap: err %v, config %v, warnings %v", err, m.Config, m.Warnings)
	}
}
