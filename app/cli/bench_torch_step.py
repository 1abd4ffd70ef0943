"""PyTorch eager on the CPU, the reference of `paralleldeck-bench step`.

The engine's model: Linear(32 -> h), L residual blocks x + Linear(4h -> h)(GELU_tanh(Linear(h -> 4h)
(x))), head Linear(h -> 10); mean cross-entropy; AdamW (lr 0.128 / h, the engine's default) or SGD
with momentum; fp32. --ranks 1 runs one process; --ranks N runs DistributedDataParallel with gloo,
one process per rank, each with the global batch / N samples.

Run by `paralleldeck-bench step` as `python3 bench_torch_step.py OPTIONS` (a data file of the
package, not a program of its own). Prints one line per timed step on rank 0, `STEP_MS <milliseconds>`, after --warmup untimed steps,
or one line `UNAVAILABLE <reason>` when torch cannot run here (exit status 0 either way).
"""
import argparse
import os
import sys
import time

INPUT_DIM = 32
CLASSES = 10


def build(torch, nn, a):
    class Block(nn.Module):
        def __init__(self, h):
            super().__init__()
            self.up = nn.Linear(h, 4 * h)
            self.act = nn.GELU(approximate="tanh")
            self.down = nn.Linear(4 * h, h)

        def forward(self, x):
            return x + self.down(self.act(self.up(x)))

    h = a.width
    return nn.Sequential(nn.Linear(INPUT_DIM, h), *[Block(h) for _ in range(a.layers)],
                         nn.Linear(h, CLASSES))


def limit_threads(a):
    # torch.set_num_threads does not reach the BLAS Debian's torch calls (OpenBLAS starts a
    # thread per core): without these a "1 thread" run uses every core for its products.
    # --blas-threads-only keeps torch's own pool at 1 and gives the threads to BLAS alone (where
    # torch's spinning OpenMP threads and OpenBLAS's compete for cores, that is faster).
    intra = 1 if a.blas_threads_only else a.threads
    os.environ["OMP_NUM_THREADS"] = str(intra)
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
    os.environ["MKL_NUM_THREADS"] = str(a.threads)
    return intra


def train(rank, a, port):
    intra = limit_threads(a)
    import torch
    from torch import nn

    torch.set_num_threads(intra)
    torch.manual_seed(rank)
    model = build(torch, nn, a)
    if a.ranks > 1:
        import torch.distributed as dist
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
        model = nn.parallel.DistributedDataParallel(model)
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=0.128 / a.width, betas=(0.9, 0.999),
                                eps=1e-8, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()
    rows = a.batch // a.ranks
    x = torch.randn(rows, INPUT_DIM)
    y = torch.randint(0, CLASSES, (rows,))

    def step():
        opt.zero_grad(set_to_none=False)
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        ms = (time.perf_counter() - t0) * 1e3
        if rank == 0:
            print(f"STEP_MS {ms:.4f}", flush=True)
    if a.ranks > 1:
        import torch.distributed as dist
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    p.add_argument("--blas-threads-only", action="store_true",
                   help="torch's intra-op pool at 1 thread, --threads for BLAS only")
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw")
    p.add_argument("--port", type=int, default=29517)
    a = p.parse_args()
    limit_threads(a)
    try:
        import torch  # noqa: F401
    except Exception as e:  # ImportError or a broken install
        print(f"UNAVAILABLE torch cannot be imported by {sys.executable}: {type(e).__name__}: {e}")
        return
    if a.ranks == 1:
        train(0, a, a.port)
    else:
        import torch.multiprocessing as mp
        mp.spawn(train, args=(a, a.port), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
