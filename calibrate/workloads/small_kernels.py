#!/usr/bin/env python3
"""Launch-bound reference workload: many tiny kernels.

One item = one kernel launch on a --elems element tensor, so throughput is bounded
by launch latency and scheduling, not by SMs or memory. Runs until killed.
"""
import argparse

from _progress import Progress, require_cuda


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--elems", type=int, default=1024)
    ap.add_argument("--sync-every", type=int, default=1000)
    a = ap.parse_args()
    torch = require_cuda()
    x = torch.zeros(a.elems, device="cuda")
    p = Progress()
    while True:
        for _ in range(a.sync_every):
            x.add_(1.0)
        torch.cuda.synchronize()
        p.add(a.sync_every)


if __name__ == "__main__":
    main()
