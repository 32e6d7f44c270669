"""Shared helpers for the gpusim calibrate reference workloads.

Every workload prints one line per unit of work on stdout:

    gpusim-progress items=<n> [key=value ...]

where n is the cumulative number of items completed since start. gpusim reads the
item counter; extra key=value fields (e.g. p50_ms) are kept in the logs only.
"""
import sys
import time


class Progress:
    """Prints cumulative progress lines at most every `every` seconds."""

    def __init__(self, every=0.1):
        self.items = 0
        self.every = every
        self.last = 0.0

    def add(self, n=1, force=False, **extra):
        self.items += n
        now = time.monotonic()
        if force or now - self.last >= self.every:
            self.last = now
            fields = "".join(f" {k}={v}" for k, v in extra.items())
            sys.stdout.write(f"gpusim-progress items={self.items}{fields}\n")
            sys.stdout.flush()


def require_cuda():
    import torch

    if not torch.cuda.is_available():
        sys.stderr.write("CUDA is not available (check CUDA_VISIBLE_DEVICES and the driver)\n")
        sys.exit(2)
    return torch
