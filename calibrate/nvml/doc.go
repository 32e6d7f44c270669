// Package nvml is the real-GPU calibrate.Probe, built on github.com/NVIDIA/go-nvml.
//
// It needs cgo on Linux (go-nvml dlopens libnvidia-ml.so.1 at Init); other builds
// get a stub whose Init reports that NVML is unavailable. On a machine without the
// NVIDIA driver Init returns an error wrapping calibrate.ErrNVMLNotFound. The probe
// only reads device state: it never changes MIG mode, clocks or any setting.
package nvml
