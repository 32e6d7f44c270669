package k8smanifest

import "gopkg.in/yaml.v3"

// The types below are the subset of the Kubernetes, Kubeflow, JobSet,
// scheduler-plugins and Volcano APIs that the translation reads, decoded with
// yaml.v3 so that every problem keeps its line. Fields of the real APIs that do
// not change what the simulator can model are declared as yaml.Node: they are
// accepted (and not checked) so that real manifests load, while a key that is
// in none of the APIs (a typo such as `resorces`) is an "unknown field" error.

// objectMeta is metav1.ObjectMeta.
type objectMeta struct {
	Name              string            `yaml:"name"`
	Namespace         string            `yaml:"namespace"`
	Labels            map[string]string `yaml:"labels"`
	Annotations       map[string]string `yaml:"annotations"`
	GenerateName      yaml.Node         `yaml:"generateName"`
	UID               yaml.Node         `yaml:"uid"`
	ResourceVersion   yaml.Node         `yaml:"resourceVersion"`
	Generation        yaml.Node         `yaml:"generation"`
	CreationTimestamp yaml.Node         `yaml:"creationTimestamp"`
	DeletionTimestamp yaml.Node         `yaml:"deletionTimestamp"`
	OwnerReferences   yaml.Node         `yaml:"ownerReferences"`
	Finalizers        yaml.Node         `yaml:"finalizers"`
	ManagedFields     yaml.Node         `yaml:"managedFields"`
	SelfLink          yaml.Node         `yaml:"selfLink"`
}

// header is what every object is first decoded into (not strictly) to pick
// its kind.
type header struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
}

// object is a namespaced object with a spec of type S.
type object[S any] struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       S          `yaml:"spec"`
	Status     yaml.Node  `yaml:"status"`
}

// priorityClass is scheduling.k8s.io/v1 PriorityClass (no spec: its fields
// are top-level).
type priorityClass struct {
	APIVersion       string     `yaml:"apiVersion"`
	Kind             string     `yaml:"kind"`
	Metadata         objectMeta `yaml:"metadata"`
	Value            *int32     `yaml:"value"`
	GlobalDefault    bool       `yaml:"globalDefault"`
	Description      yaml.Node  `yaml:"description"`
	PreemptionPolicy yaml.Node  `yaml:"preemptionPolicy"`
}

// podTemplate is corev1.PodTemplateSpec.
type podTemplate struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     podSpec    `yaml:"spec"`
}

// podSpec is corev1.PodSpec.
type podSpec struct {
	Containers        []container       `yaml:"containers"`
	InitContainers    []container       `yaml:"initContainers"`
	NodeSelector      map[string]string `yaml:"nodeSelector"`
	Affinity          *affinity         `yaml:"affinity"`
	PriorityClassName string            `yaml:"priorityClassName"`
	Priority          *int32            `yaml:"priority"`
	SchedulerName     string            `yaml:"schedulerName"`

	Tolerations                   yaml.Node `yaml:"tolerations"`
	Resources                     yaml.Node `yaml:"resources"`
	RestartPolicy                 yaml.Node `yaml:"restartPolicy"`
	Volumes                       yaml.Node `yaml:"volumes"`
	ServiceAccountName            yaml.Node `yaml:"serviceAccountName"`
	ServiceAccount                yaml.Node `yaml:"serviceAccount"`
	AutomountServiceAccountToken  yaml.Node `yaml:"automountServiceAccountToken"`
	HostNetwork                   yaml.Node `yaml:"hostNetwork"`
	HostIPC                       yaml.Node `yaml:"hostIPC"`
	HostPID                       yaml.Node `yaml:"hostPID"`
	HostUsers                     yaml.Node `yaml:"hostUsers"`
	ShareProcessNamespace         yaml.Node `yaml:"shareProcessNamespace"`
	DNSPolicy                     yaml.Node `yaml:"dnsPolicy"`
	DNSConfig                     yaml.Node `yaml:"dnsConfig"`
	HostAliases                   yaml.Node `yaml:"hostAliases"`
	Hostname                      yaml.Node `yaml:"hostname"`
	Subdomain                     yaml.Node `yaml:"subdomain"`
	SetHostnameAsFQDN             yaml.Node `yaml:"setHostnameAsFQDN"`
	SecurityContext               yaml.Node `yaml:"securityContext"`
	ImagePullSecrets              yaml.Node `yaml:"imagePullSecrets"`
	TerminationGracePeriodSeconds yaml.Node `yaml:"terminationGracePeriodSeconds"`
	ActiveDeadlineSeconds         yaml.Node `yaml:"activeDeadlineSeconds"`
	NodeName                      yaml.Node `yaml:"nodeName"`
	RuntimeClassName              yaml.Node `yaml:"runtimeClassName"`
	TopologySpreadConstraints     yaml.Node `yaml:"topologySpreadConstraints"`
	EnableServiceLinks            yaml.Node `yaml:"enableServiceLinks"`
	EphemeralContainers           yaml.Node `yaml:"ephemeralContainers"`
	Overhead                      yaml.Node `yaml:"overhead"`
	PreemptionPolicy              yaml.Node `yaml:"preemptionPolicy"`
	ReadinessGates                yaml.Node `yaml:"readinessGates"`
	SchedulingGates               yaml.Node `yaml:"schedulingGates"`
	OS                            yaml.Node `yaml:"os"`
	ResourceClaims                yaml.Node `yaml:"resourceClaims"`
}

// container is corev1.Container.
type container struct {
	Name      string    `yaml:"name"`
	Resources resources `yaml:"resources"`
	// RestartPolicy "Always" on an init container makes it a sidecar
	// (KEP-753), whose requests add to the regular containers'.
	RestartPolicy string `yaml:"restartPolicy"`

	Image                    yaml.Node `yaml:"image"`
	Command                  yaml.Node `yaml:"command"`
	Args                     yaml.Node `yaml:"args"`
	WorkingDir               yaml.Node `yaml:"workingDir"`
	Ports                    yaml.Node `yaml:"ports"`
	Env                      yaml.Node `yaml:"env"`
	EnvFrom                  yaml.Node `yaml:"envFrom"`
	VolumeMounts             yaml.Node `yaml:"volumeMounts"`
	VolumeDevices            yaml.Node `yaml:"volumeDevices"`
	LivenessProbe            yaml.Node `yaml:"livenessProbe"`
	ReadinessProbe           yaml.Node `yaml:"readinessProbe"`
	StartupProbe             yaml.Node `yaml:"startupProbe"`
	Lifecycle                yaml.Node `yaml:"lifecycle"`
	TerminationMessagePath   yaml.Node `yaml:"terminationMessagePath"`
	TerminationMessagePolicy yaml.Node `yaml:"terminationMessagePolicy"`
	ImagePullPolicy          yaml.Node `yaml:"imagePullPolicy"`
	SecurityContext          yaml.Node `yaml:"securityContext"`
	Stdin                    yaml.Node `yaml:"stdin"`
	StdinOnce                yaml.Node `yaml:"stdinOnce"`
	TTY                      yaml.Node `yaml:"tty"`
	ResizePolicy             yaml.Node `yaml:"resizePolicy"`
}

// resources is corev1.ResourceRequirements; quantities are kept as strings.
type resources struct {
	Requests map[string]string `yaml:"requests"`
	Limits   map[string]string `yaml:"limits"`
	Claims   yaml.Node         `yaml:"claims"`
}

// affinity is corev1.Affinity; only required node affinity is read.
type affinity struct {
	NodeAffinity    *nodeAffinity `yaml:"nodeAffinity"`
	PodAffinity     yaml.Node     `yaml:"podAffinity"`
	PodAntiAffinity yaml.Node     `yaml:"podAntiAffinity"`
}

type nodeAffinity struct {
	Required  *nodeSelector `yaml:"requiredDuringSchedulingIgnoredDuringExecution"`
	Preferred yaml.Node     `yaml:"preferredDuringSchedulingIgnoredDuringExecution"`
}

type nodeSelector struct {
	NodeSelectorTerms []nodeSelectorTerm `yaml:"nodeSelectorTerms"`
}

type nodeSelectorTerm struct {
	MatchExpressions []selectorRequirement `yaml:"matchExpressions"`
	MatchFields      []selectorRequirement `yaml:"matchFields"`
}

type selectorRequirement struct {
	Key      string   `yaml:"key"`
	Operator string   `yaml:"operator"`
	Values   []string `yaml:"values"`
}

// batchJobSpec is batch/v1 JobSpec.
type batchJobSpec struct {
	Parallelism           *int32      `yaml:"parallelism"`
	Completions           *int32      `yaml:"completions"`
	CompletionMode        string      `yaml:"completionMode"`
	ActiveDeadlineSeconds *int64      `yaml:"activeDeadlineSeconds"`
	Template              podTemplate `yaml:"template"`

	BackoffLimit            yaml.Node `yaml:"backoffLimit"`
	BackoffLimitPerIndex    yaml.Node `yaml:"backoffLimitPerIndex"`
	MaxFailedIndexes        yaml.Node `yaml:"maxFailedIndexes"`
	PodFailurePolicy        yaml.Node `yaml:"podFailurePolicy"`
	SuccessPolicy           yaml.Node `yaml:"successPolicy"`
	TTLSecondsAfterFinished yaml.Node `yaml:"ttlSecondsAfterFinished"`
	Suspend                 yaml.Node `yaml:"suspend"`
	Selector                yaml.Node `yaml:"selector"`
	ManualSelector          yaml.Node `yaml:"manualSelector"`
	PodReplacementPolicy    yaml.Node `yaml:"podReplacementPolicy"`
	ManagedBy               yaml.Node `yaml:"managedBy"`
}

// replicaSpec is Kubeflow's common ReplicaSpec.
type replicaSpec struct {
	Replicas      *int32      `yaml:"replicas"`
	Template      podTemplate `yaml:"template"`
	RestartPolicy yaml.Node   `yaml:"restartPolicy"`
}

// runPolicy is Kubeflow's common RunPolicy.
type runPolicy struct {
	ActiveDeadlineSeconds *int64            `yaml:"activeDeadlineSeconds"`
	SchedulingPolicy      *schedulingPolicy `yaml:"schedulingPolicy"`

	CleanPodPolicy          yaml.Node `yaml:"cleanPodPolicy"`
	TTLSecondsAfterFinished yaml.Node `yaml:"ttlSecondsAfterFinished"`
	BackoffLimit            yaml.Node `yaml:"backoffLimit"`
	Suspend                 yaml.Node `yaml:"suspend"`
	ManagedBy               yaml.Node `yaml:"managedBy"`
}

// schedulingPolicy is Kubeflow's RunPolicy.SchedulingPolicy (the PodGroup the
// operator creates for gang scheduling).
type schedulingPolicy struct {
	MinAvailable           *int32    `yaml:"minAvailable"`
	Queue                  string    `yaml:"queue"`
	PriorityClass          string    `yaml:"priorityClass"`
	MinResources           yaml.Node `yaml:"minResources"`
	ScheduleTimeoutSeconds yaml.Node `yaml:"scheduleTimeoutSeconds"`
}

// tfJobSpec is kubeflow.org/v1 TFJobSpec.
type tfJobSpec struct {
	ReplicaSpecs        map[string]*replicaSpec `yaml:"tfReplicaSpecs"`
	RunPolicy           runPolicy               `yaml:"runPolicy"`
	SuccessPolicy       yaml.Node               `yaml:"successPolicy"`
	EnableDynamicWorker yaml.Node               `yaml:"enableDynamicWorker"`
}

// pyTorchJobSpec is kubeflow.org/v1 PyTorchJobSpec.
type pyTorchJobSpec struct {
	ReplicaSpecs  map[string]*replicaSpec `yaml:"pytorchReplicaSpecs"`
	RunPolicy     runPolicy               `yaml:"runPolicy"`
	ElasticPolicy yaml.Node               `yaml:"elasticPolicy"`
	NprocPerNode  yaml.Node               `yaml:"nprocPerNode"`
}

// mpiJobSpec is kubeflow.org/v2beta1 MPIJobSpec (v1's fields included).
type mpiJobSpec struct {
	ReplicaSpecs           map[string]*replicaSpec `yaml:"mpiReplicaSpecs"`
	RunPolicy              runPolicy               `yaml:"runPolicy"`
	SlotsPerWorker         yaml.Node               `yaml:"slotsPerWorker"`
	LauncherCreationPolicy yaml.Node               `yaml:"launcherCreationPolicy"`
	MPIImplementation      yaml.Node               `yaml:"mpiImplementation"`
	SSHAuthMountPath       yaml.Node               `yaml:"sshAuthMountPath"`
	CleanPodPolicy         yaml.Node               `yaml:"cleanPodPolicy"`
	MainContainer          yaml.Node               `yaml:"mainContainer"`
}

// jobSetSpec is jobset.x-k8s.io/v1alpha2 JobSetSpec.
type jobSetSpec struct {
	ReplicatedJobs []replicatedJob `yaml:"replicatedJobs"`

	Network                 yaml.Node `yaml:"network"`
	SuccessPolicy           yaml.Node `yaml:"successPolicy"`
	FailurePolicy           yaml.Node `yaml:"failurePolicy"`
	StartupPolicy           yaml.Node `yaml:"startupPolicy"`
	Suspend                 yaml.Node `yaml:"suspend"`
	Coordinator             yaml.Node `yaml:"coordinator"`
	ManagedBy               yaml.Node `yaml:"managedBy"`
	TTLSecondsAfterFinished yaml.Node `yaml:"ttlSecondsAfterFinished"`
}

type replicatedJob struct {
	Name      string          `yaml:"name"`
	Replicas  *int32          `yaml:"replicas"`
	Template  jobTemplateSpec `yaml:"template"`
	DependsOn yaml.Node       `yaml:"dependsOn"`
}

type jobTemplateSpec struct {
	Metadata objectMeta   `yaml:"metadata"`
	Spec     batchJobSpec `yaml:"spec"`
}

// podGroupSpec is the spec of scheduler-plugins' scheduling.x-k8s.io/v1alpha1
// PodGroup and of Volcano's scheduling.volcano.sh/v1beta1 PodGroup (the union
// of both; queue and priorityClassName are Volcano's).
type podGroupSpec struct {
	MinMember              *int32    `yaml:"minMember"`
	Queue                  string    `yaml:"queue"`
	PriorityClassName      string    `yaml:"priorityClassName"`
	MinResources           yaml.Node `yaml:"minResources"`
	MinTaskMember          yaml.Node `yaml:"minTaskMember"`
	ScheduleTimeoutSeconds yaml.Node `yaml:"scheduleTimeoutSeconds"`
	NetworkTopology        yaml.Node `yaml:"networkTopology"`
}

// resourceQuotaSpec is corev1.ResourceQuotaSpec (read, then ignored).
type resourceQuotaSpec struct {
	Hard          map[string]string `yaml:"hard"`
	Scopes        yaml.Node         `yaml:"scopes"`
	ScopeSelector yaml.Node         `yaml:"scopeSelector"`
}
