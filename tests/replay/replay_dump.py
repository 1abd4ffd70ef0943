#!/usr/bin/env python3
"""Replays a paralleldeck-run --dump-dir in plain PyTorch (double precision) and compares losses.

A developer check, not a ctest test (nothing in the test suite needs torch):

    build/app/paralleldeck-run --strategy dp --devices 4 --steps 12 \\
        --dump-dir /tmp/dump --summary /tmp/dump/summary.json
    python3 tests/replay/replay_dump.py /tmp/dump /tmp/dump/summary.json

(Debian's python3-torch lives in /usr/bin/python3's packages; where another python3 comes first
on PATH, e.g. a pyenv shim, run /usr/bin/python3.)

Everything the replay uses comes from the dump: the initial weights and batches (.npy) and the
manifest's model shape, optimizer, hyper-parameters and learning-rate schedule. The engine's
losses come from the run's summary JSON. Prints both per step and the largest relative
difference; exits 1 when that exceeds --tolerance (the engine computes in float32: about 1e-7
while the loss is above 0.1, a few 1e-6 once it is near 0 or after 12 steps of a diverging run).
"""
import argparse
import ast
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F


def read_npy(path):
    """The two dtypes the engine writes (<f4, <i4), without needing numpy."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(path + " is not a .npy file")
    major = data[6]
    if major == 1:
        (header_len,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (header_len,) = struct.unpack("<I", data[8:12])
        start = 12
    header = ast.literal_eval(data[start:start + header_len].decode("latin1"))
    if header["fortran_order"]:
        raise ValueError(path + ": Fortran order is not supported")
    dtypes = {"<f4": torch.float32, "<i4": torch.int32}
    if header["descr"] not in dtypes:
        raise ValueError(path + ": unsupported dtype " + header["descr"])
    body = bytearray(data[start + header_len:])
    tensor = torch.frombuffer(body, dtype=dtypes[header["descr"]]) if body else torch.empty(0)
    return tensor.reshape(header["shape"]).clone()


def make_optimizer(spec, params):
    schedule = spec.get("lr_schedule", {"kind": "constant"})
    if schedule.get("kind") != "constant" or schedule.get("warmup_steps", 0) != 0:
        raise ValueError("this replay knows the constant schedule only, manifest says %s" % schedule)
    if spec["name"] == "adamw":
        return torch.optim.AdamW(params, lr=spec["lr"], betas=tuple(spec["betas"]),
                                 eps=spec["eps"], weight_decay=spec["weight_decay"],
                                 amsgrad=spec.get("amsgrad", False))
    if spec["name"] == "sgd":
        return torch.optim.SGD(params, lr=spec["lr"], momentum=spec["momentum"],
                               dampening=spec.get("dampening", 0.0),
                               nesterov=spec.get("nesterov", False),
                               weight_decay=spec.get("weight_decay", 0.0))
    raise ValueError("unknown optimizer " + spec["name"])


def replay(dump_dir):
    with open(os.path.join(dump_dir, "manifest.json")) as f:
        manifest = json.load(f)
    params = {t["name"]: read_npy(os.path.join(dump_dir, t["file"])).double().requires_grad_()
              for t in manifest["tensors"]}
    layers = manifest["model"]["layers"]
    optimizer = make_optimizer(manifest["optimizer"], list(params.values()))
    losses = []
    for batch in manifest["batches"]:
        x = read_npy(os.path.join(dump_dir, batch["x"])).double()
        y = read_npy(os.path.join(dump_dir, batch["y"])).long()
        h = x @ params["input.w"] + params["input.b"]
        for l in range(layers):
            p = "block%d." % l
            inner = F.gelu(h @ params[p + "w1"] + params[p + "b1"], approximate="tanh")
            h = h + (inner @ params[p + "w2"] + params[p + "b2"])
        logits = h @ params["head.w"] + params["head.b"]
        loss = F.cross_entropy(logits, y)  # mean over the global batch
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return manifest, losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump_dir")
    parser.add_argument("summary", help="the run's --summary JSON (the engine's losses)")
    parser.add_argument("--tolerance", type=float, default=1e-5,
                        help="largest relative loss difference accepted (default 1e-5)")
    args = parser.parse_args()
    torch.set_default_dtype(torch.float64)
    manifest, reference = replay(args.dump_dir)
    with open(args.summary) as f:
        summary = json.load(f)
    engine = [s["loss"] for s in summary["steps"]]
    opt = manifest["optimizer"]
    print("%s, %d steps, %s lr %.6g, schedule %s" % (
        summary.get("strategy", "?"), len(engine), opt["name"], opt["lr"],
        opt["lr_schedule"]["kind"]))
    print("%5s %14s %14s %11s" % ("step", "engine", "pytorch", "rel diff"))
    worst = 0.0
    for step, (e, r) in enumerate(zip(engine, reference)):
        rel = abs(e - r) / max(abs(r), 1e-12) if math.isfinite(e) and math.isfinite(r) else math.inf
        worst = max(worst, rel)
        print("%5d %14.8f %14.8f %11.2e" % (step, e, r, rel))
    if len(engine) != len(reference):
        print("step counts differ: engine %d, dump %d" % (len(engine), len(reference)))
        return 1
    print("max relative difference %.3e (tolerance %.1e)" % (worst, args.tolerance))
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
