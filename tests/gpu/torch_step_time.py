#!/usr/bin/env python3
"""PyTorch eager reference for the ParallelDeck engine's training step.

Model: Linear(32 -> h), L residual blocks x + Linear(4h -> h)(GELU_tanh(Linear(h -> 4h)(x))),
head Linear(h -> 10); mean cross-entropy loss; AdamW (default) or SGD with momentum.
Prints one final line:
  RESULT torch_step width=W layers=L batch=B optimizer=O median_ms=X
"""
import argparse
import statistics
import sys

INPUT_DIM = 32
CLASSES = 10


def unavailable(reason):
    print(f"RESULT torch_step unavailable reason={reason}")
    sys.exit(0)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw")
    p.add_argument("--tf32", action="store_true", help="allow TF32 matmuls (default: strict fp32)")
    a = p.parse_args()

    try:
        import torch
        from torch import nn
    except Exception as e:  # ImportError or a broken install
        unavailable(f"torch_import_failed:{type(e).__name__}")
    if not torch.cuda.is_available():
        unavailable("cuda_not_available")

    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.manual_seed(0)
    dev = torch.device("cuda")

    class Block(nn.Module):
        def __init__(self, h):
            super().__init__()
            self.up = nn.Linear(h, 4 * h)
            self.act = nn.GELU(approximate="tanh")
            self.down = nn.Linear(4 * h, h)

        def forward(self, x):
            return x + self.down(self.act(self.up(x)))

    h = a.width
    model = nn.Sequential(nn.Linear(INPUT_DIM, h),
                          *[Block(h) for _ in range(a.layers)],
                          nn.Linear(h, CLASSES)).to(dev)
    loss_fn = nn.CrossEntropyLoss()
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999),
                                eps=1e-8, weight_decay=0.01)

    x = torch.randn(a.batch, INPUT_DIM, device=dev)
    y = torch.randint(0, CLASSES, (a.batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()

    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(a.steps)]
    for start, end in events:
        start.record()
        step()
        end.record()
    torch.cuda.synchronize()

    median_ms = statistics.median(s.elapsed_time(e) for s, e in events)
    print(f"RESULT torch_step width={a.width} layers={a.layers} batch={a.batch} "
          f"optimizer={a.optimizer} median_ms={median_ms:.4f}")


if __name__ == "__main__":
    main()
