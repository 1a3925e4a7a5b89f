"""Read an image tree with torchvision ImageFolder + DataLoader; print JSON.

usage: loader.py ROOT [WORKERS] [EPOCHS]
Prints {"samples": n, "seconds": s, "samples_per_s": r, "classes": k,
"checksum": c} where checksum sums every decoded tensor, so two trees
with the same content give the same number.
"""
import json
import sys
import time
import warnings

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    root = sys.argv[1]
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    tf = transforms.Compose([transforms.Resize((64, 64)), transforms.ToTensor()])
    ds = datasets.ImageFolder(root, transform=tf)
    dl = DataLoader(ds, batch_size=64, num_workers=workers, shuffle=False)
    total, checksum = 0, 0.0
    t0 = time.perf_counter()
    for _ in range(epochs):
        for x, y in dl:
            total += len(y)
            checksum += float(x.double().sum()) + float(y.sum())
    dt = time.perf_counter() - t0
    print(json.dumps({"samples": total, "seconds": dt,
                      "samples_per_s": total / dt, "classes": len(ds.classes),
                      "checksum": round(checksum, 3)}))


if __name__ == "__main__":
    # More workers than cores is deliberate: the readers wait on I/O.
    warnings.filterwarnings("ignore", message=".*worker processes in total.*")
    torch.set_num_threads(1)
    main()
