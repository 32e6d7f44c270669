#!/usr/bin/env python3
"""Latency-sensitive reference workload: small-batch inference.

Runs a mid-sized MLP on --batch requests at a time, back to back. One item = one
request batch. Each progress line also reports the p50 and p99 latency (ms) of the
last --window batches: `gpusim-progress items=<n> p50_ms=<x> p99_ms=<y>`.
"""
import argparse
import collections
import time

from _progress import Progress, require_cuda


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--window", type=int, default=200)
    a = ap.parse_args()
    torch = require_cuda()
    layers = []
    for _ in range(a.layers):
        layers += [torch.nn.Linear(a.hidden, a.hidden), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).cuda().half().eval()
    x = torch.randn(a.batch, a.hidden, device="cuda", dtype=torch.half)
    lat = collections.deque(maxlen=a.window)
    p = Progress()
    with torch.inference_mode():
        while True:
            t = time.perf_counter()
            model(x)
            torch.cuda.synchronize()
            lat.append((time.perf_counter() - t) * 1000)
            s = sorted(lat)
            p50 = s[len(s) // 2]
            p99 = s[min(len(s) - 1, int(len(s) * 0.99))]
            p.add(1, p50_ms=f"{p50:.3f}", p99_ms=f"{p99:.3f}")


if __name__ == "__main__":
    main()
