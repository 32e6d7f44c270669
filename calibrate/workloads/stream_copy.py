#!/usr/bin/env python3
"""Memory-bound reference workload: streaming device-to-device copies.

One item = one copy of a --mib MiB buffer (read + write = 2 x mib MiB of DRAM
traffic). Runs until killed.
"""
import argparse

from _progress import Progress, require_cuda


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mib", type=int, default=1024, help="buffer size in MiB")
    ap.add_argument("--sync-every", type=int, default=8)
    a = ap.parse_args()
    torch = require_cuda()
    n = a.mib * (1 << 20) // 4
    src = torch.rand(n, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    p = Progress()
    while True:
        for _ in range(a.sync_every):
            dst.copy_(src)
        torch.cuda.synchronize()
        p.add(a.sync_every)


if __name__ == "__main__":
    main()
