//go:build !cgo || !linux

package nvml

import (
	"fmt"

	"github.com/gpusim/gpusim/calibrate"
)

// Probe is the stub used without cgo or off Linux: Init always fails with an error
// wrapping calibrate.ErrNVMLNotFound, and every other method reports that NVML is
// not initialized.
type Probe struct{}

// New returns the stub probe; libraryPath is ignored.
func New(libraryPath string) *Probe { return &Probe{} }

var errStub = fmt.Errorf("%w (this gpusim was built without cgo; rebuild with CGO_ENABLED=1 on Linux)", calibrate.ErrNVMLNotFound)

// Init implements calibrate.Probe.
func (p *Probe) Init() error { return errStub }

// Shutdown implements calibrate.Probe.
func (p *Probe) Shutdown() error { return nil }

// DriverVersion implements calibrate.Probe.
func (p *Probe) DriverVersion() (string, error) { return "", errStub }

// CUDAVersion implements calibrate.Probe.
func (p *Probe) CUDAVersion() (string, error) { return "", errStub }

// DeviceCount implements calibrate.Probe.
func (p *Probe) DeviceCount() (int, error) { return 0, errStub }

// DeviceInfo implements calibrate.Probe.
func (p *Probe) DeviceInfo(int) (calibrate.DeviceInfo, error) { return calibrate.DeviceInfo{}, errStub }

// CommonAncestor implements calibrate.Probe.
func (p *Probe) CommonAncestor(int, int) (calibrate.PCIeLevel, error) { return 0, errStub }

// NVLinks implements calibrate.Probe.
func (p *Probe) NVLinks(int) ([]calibrate.NVLink, error) { return nil, errStub }

// Sample implements calibrate.Probe.
func (p *Probe) Sample(int) (calibrate.Sample, error) { return calibrate.Sample{}, errStub }

var _ calibrate.Probe = (*Probe)(nil)
