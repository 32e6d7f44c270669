#!/usr/bin/env python3
"""Compute-bound reference workload: back-to-back large GEMMs.

One item = one N x N x N matrix multiply (2*N^3 FLOPs). Runs until killed.
"""
import argparse

from _progress import Progress, require_cuda


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=8192, help="matrix size N")
    ap.add_argument("--dtype", default="bfloat16", choices=["float16", "bfloat16", "float32"])
    ap.add_argument("--sync-every", type=int, default=4, help="GEMMs between synchronizations")
    a = ap.parse_args()
    torch = require_cuda()
    dt = getattr(torch, a.dtype)
    x = torch.randn(a.size, a.size, device="cuda", dtype=dt)
    y = torch.randn(a.size, a.size, device="cuda", dtype=dt)
    out = torch.empty_like(x)
    p = Progress()
    while True:
        for _ in range(a.sync_every):
            torch.matmul(x, y, out=out)
        torch.cuda.synchronize()
        p.add(a.sync_every)


if __name__ == "__main__":
    main()
