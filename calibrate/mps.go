package calibrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// MPSController starts and stops an MPS control daemon for the mps cells of a run.
// Start returns the environment variables (KEY=value) the workloads need to reach
// the daemon; Stop shuts it down and cleans up.
type MPSController interface {
	Start(ctx context.Context) ([]string, error)
	Stop() error
}

// ExecMPS runs a private MPS control daemon: its pipe and log directories are fresh
// 0700 temporary directories, so it never touches a daemon someone else runs on
// the box. Start runs "Command -d"; Stop sends "quit" to "Command" on stdin and
// removes the directories.
type ExecMPS struct {
	Command string // e.g. nvidia-cuda-mps-control
	GPU     string // CUDA_VISIBLE_DEVICES for the daemon (GPU UUID)
	Timeout time.Duration

	pipeDir, logDir string
}

func (m *ExecMPS) env() []string {
	return []string{
		"CUDA_MPS_PIPE_DIRECTORY=" + m.pipeDir,
		"CUDA_MPS_LOG_DIRECTORY=" + m.logDir,
	}
}

func (m *ExecMPS) run(ctx context.Context, stdin string, args ...string) error {
	to := m.Timeout
	if to == 0 {
		to = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	cmd := exec.CommandContext(ctx, m.Command, args...)
	cmd.Env = append(os.Environ(), m.env()...)
	if m.GPU != "" {
		cmd.Env = append(cmd.Env, "CUDA_VISIBLE_DEVICES="+m.GPU)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// "-d" forks the daemon; should it keep our output pipe open, do not wait
	// for it beyond the control process's own exit.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return fmt.Errorf("%s %s: %w: %s", m.Command, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// Start implements MPSController.
func (m *ExecMPS) Start(ctx context.Context) ([]string, error) {
	var err error
	if m.pipeDir, err = os.MkdirTemp("", "gpusim-mps-pipe-*"); err != nil {
		return nil, err
	}
	if m.logDir, err = os.MkdirTemp("", "gpusim-mps-log-*"); err != nil {
		os.RemoveAll(m.pipeDir)
		return nil, err
	}
	if err := m.run(ctx, "", "-d"); err != nil {
		os.RemoveAll(m.pipeDir)
		os.RemoveAll(m.logDir)
		return nil, err
	}
	return m.env(), nil
}

// Stop implements MPSController.
func (m *ExecMPS) Stop() error {
	err := m.run(context.Background(), "quit\n")
	os.RemoveAll(m.pipeDir)
	os.RemoveAll(m.logDir)
	return err
}

// NoMPS is the MPSController used with the fake NVML: it starts nothing and only
// exports a private pipe directory variable so workloads see the same environment
// shape as under a real daemon.
type NoMPS struct{ dir string }

// Start implements MPSController.
func (n *NoMPS) Start(context.Context) ([]string, error) {
	var err error
	if n.dir, err = os.MkdirTemp("", "gpusim-mps-fake-*"); err != nil {
		return nil, err
	}
	return []string{"CUDA_MPS_PIPE_DIRECTORY=" + n.dir, "CUDA_MPS_LOG_DIRECTORY=" + n.dir}, nil
}

// Stop implements MPSController.
func (n *NoMPS) Stop() error { return os.RemoveAll(n.dir) }
