package kubetest

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPUResource is the extended resource NVIDIA's device plugin advertises.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// CreateGPUNode registers a Ready node with gpus nvidia.com/gpu (plus 64
// CPUs, 512 GiB and 110 pods) in capacity and allocatable, as a kubelet with
// the NVIDIA device plugin would report it.
func (c *Cluster) CreateGPUNode(ctx context.Context, name string, gpus int, labels map[string]string) (*corev1.Node, error) {
	nodes := c.Client.CoreV1().Nodes()
	n, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubetest: node %s: %w", name, err)
	}
	res := corev1.ResourceList{
		GPUResource:           resource.MustParse(strconv.Itoa(gpus)),
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	now := metav1.Now()
	n.Status = corev1.NodeStatus{
		Capacity: res, Allocatable: res.DeepCopy(),
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
	}
	n, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubetest: node %s status: %w", name, err)
	}
	return n, nil
}

// Bind binds pod ns/name to node through the pods/binding subresource, as a
// scheduler does.
func (c *Cluster) Bind(ctx context.Context, ns, pod, node string) error {
	err := c.Client.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("kubetest: bind %s/%s to %s: %w", ns, pod, node, err)
	}
	return nil
}
