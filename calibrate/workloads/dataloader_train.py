#!/usr/bin/env python3
"""Data-loader-bound reference workload: a training step fed by CPU-heavy loading.

Worker processes decode and augment synthetic images on the CPU (the bottleneck);
the GPU runs a small CNN forward/backward step per batch. One item = one training
sample. Runs until killed (the DataLoader workers die with the process group).
"""
import argparse

from _progress import Progress, require_cuda


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--cpu-work", type=int, default=3, help="augmentation passes per image")
    a = ap.parse_args()
    torch = require_cuda()
    import numpy as np
    from torch.utils.data import DataLoader, IterableDataset

    class Synthetic(IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            rng = np.random.default_rng(0 if info is None else info.id)
            while True:
                img = rng.integers(0, 255, (a.image, a.image, 3), dtype=np.uint8).astype(np.float32)
                for _ in range(a.cpu_work):  # CPU-side "augmentation"
                    img = np.flip(img, axis=1)
                    img = (img - img.mean()) / (img.std() + 1e-6)
                    img = np.clip(img * 1.1 + 0.05, -3, 3)
                yield torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), int(rng.integers(0, 10))

    loader = DataLoader(Synthetic(), batch_size=a.batch, num_workers=a.workers, pin_memory=True)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, stride=2), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, stride=2), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10),
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    lossf = torch.nn.CrossEntropyLoss()
    p = Progress()
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        opt.zero_grad(set_to_none=True)
        lossf(model(x), y).backward()
        opt.step()
        torch.cuda.synchronize()
        p.add(x.shape[0])


if __name__ == "__main__":
    main()
