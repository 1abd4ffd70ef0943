#!/usr/bin/env python3
"""Replays a paralleldeck-run --dump-dir in plain PyTorch (double precision) and compares losses.

A developer check, not a ctest test (nothing in the test suite needs torch):

    build/app/paralleldeck-run --strategy dp --devices 4 --steps 12 \\
        --dump-dir /tmp/dump --summary /tmp/dump/summary.json
    python3 tests/replay/replay_dump.py /tmp/dump /tmp/dump/summary.json

A transformer dump (--model transformer) replays the manifest's model note with torch's
layer_norm and softmax (transformer_forward), and with --experts its moe_note (moe_forward).

(Debian's python3-torch lives in /usr/bin/python3's packages; where another python3 comes first
on PATH, e.g. a pyenv shim, run /usr/bin/python3.)

Everything the replay uses comes from the dump: the initial weights and batches (.npy) and the
manifest's model shape, optimizer, hyper-parameters and learning-rate schedule. The engine's
losses come from the run's summary JSON. Prints both per step and the largest relative
difference; exits 1 when that exceeds --tolerance (the engine computes in float32: about 1e-7
while the loss is above 0.1, a few 1e-6 once it is near 0 or after 12 steps of a diverging run).

A bf16-mixed dump (--precision bf16-mixed) is replayed in float32 with explicit bf16 casts at
the points the manifest's "precision" section lists (replay_bf16), and for dp, ps and ZeRO with
each replica's gradients summed in the engine's order, rounding every partial sum. It cannot be
bit for bit: PyTorch's and OpenBLAS's fp32 products sum in other orders, and a last-bit change
before a bf16 cast flips its rounding now and then (2^-8 relative), which the next steps
amplify. --noise-floor measures that spread: the replay itself, with 1e-7 relative noise before
every cast, moves by 2e-4 to 7e-4 absolute over 12 AdamW steps of the default model. The engine
stays within it: single, dp x2 and dp x4, AdamW and SGD, 12 steps, differ from the replay by at
most 3e-4 absolute, at most 1e-2 relative while the loss is above 0.01 (1e-3 to 1e-2 AdamW,
under 1e-3 SGD); below 0.01 the loss is set by logits bf16 resolves to 2^-8 of their size and
the relative difference reaches a few 1e-2 at absolute 1e-5. A step passes within 1e-2 relative
or 1e-4 absolute (the bf16 defaults). Pipeline, tp and hybrid dumps replay as one device: their
sharded partial sums are rounded per shard in the engine, not in the replay, so they differ
more (hybrid 2x2x2: 6e-4 absolute from step 1).

An fp16-mixed dump replays the same way with fp16 casts (torch's float16: inf past 65504) and
torch.amp.GradScaler's rules as the manifest's loss_scaling states them (the loss scaled,
unscale_ in float32, the step skipped on inf or NaN, backoff and growth of the float32 scale),
clip_grad_norm_ after unscaling where the manifest sets it, and without a master copy where it
says no_master_weights (each update rounded back into the 16-bit weights). Measured on 8-step
runs (tests/replay/check_replays.sh): at most 1.2e-4 relative, 4e-5 absolute; a run whose
forward overflows has NaN losses on both sides. The bf16 tolerances apply.

A zero3 dump under FSDP2's MixedPrecisionPolicy (precision.reduce_dtype "fp32") replays as the
bf16 one with every partial sum of the gradient reduction in float32 (the fp32 master is then
the sharded parameters themselves: the same arithmetic); within the bf16 tolerances.

LAMB and bitsandbytes' AdamW8bit have no torch.optim class: the replay has its own (Lamb,
AdamW8bit below), written from the paper's Algorithm 2 and from bitsandbytes' pure-PyTorch
reference and CUDA kernel. AdamW8bit builds its dynamic maps as create_dynamic_map does (float32
linspace) and prints how far they are from the engine's (one float32 ulp in about 90 of 256
codes: the engine rounds exact midpoints once). Its losses are within 2e-5 relative over 8
steps (a flipped 8-bit code, ~1% of one moment, amplifies the last-bit differences of the
replay's double-precision gradients); LAMB's within 2e-7.
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

# bf16-mixed: see replay_bf16; the default is what the runs in the docstring reach, with margin.
BF16_TOLERANCE = 1e-2
BF16_ABS_TOLERANCE = 1e-4


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


class Lamb(torch.optim.Optimizer):
    """LAMB as You et al. 2019 write it (Algorithm 2, one tensor = one layer): AdamW's
    bias-corrected direction plus decay, scaled by ||w|| / ||u|| (1 where a norm is 0)."""

    def __init__(self, params, lr, betas, eps, weight_decay):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                st = self.state[p]
                if not st:
                    st["t"], st["m"], st["v"] = 0, torch.zeros_like(p), torch.zeros_like(p)
                st["t"] += 1
                t, m, v = st["t"], st["m"], st["v"]
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                u = (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + group["eps"])
                u = u + group["weight_decay"] * p
                w_norm, u_norm = p.norm(), u.norm()
                trust = (w_norm / u_norm).item() if w_norm > 0 and u_norm > 0 else 1.0
                p.sub_(group["lr"] * trust * u)


def bnb_dynamic_map(signed):
    """bitsandbytes.functional.create_dynamic_map(signed, 7, 8), as written there (float32
    linspace), independent of the engine's own construction of the map."""
    data = []
    for i in range(7):
        items = 2 ** i + 1 if signed else 2 ** (i + 1) + 1
        boundaries = torch.linspace(0.1, 1, items, dtype=torch.float32)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-6 + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-6 + i)) * means).tolist()
    data += [0, 1.0]
    data.sort()
    return torch.tensor(data, dtype=torch.float32)


class AdamW8bit(torch.optim.Optimizer):
    """bitsandbytes' AdamW8bit in float32 (its pure-PyTorch reference and CUDA kernel rules):
    m and v stored as 8-bit codes of the dynamic maps, blocks of `blocksize` with an fp32
    absmax each, dequantized for the update and quantized to the nearest code of state /
    new absmax (torch.bucketize on the codes' midpoints, m's sign kept); Adam's step
    -lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + eps sqrt(1 - b2^t)), then p *= 1 - lr wd.
    Tensors under min_8bit_size keep float32 states."""

    def __init__(self, params, lr, betas, eps, weight_decay, blocksize, min_8bit_size):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.blocksize, self.min_8bit_size = blocksize, min_8bit_size
        self.code1, self.code2 = bnb_dynamic_map(True), bnb_dynamic_map(False)

    def quantize(self, x, code, signed):
        n, b = x.numel(), self.blocksize
        pad = (-n) % b
        blocks = F.pad(x, (0, pad)).reshape(-1, b)
        absmax = blocks.abs().max(dim=1).values  # padding (0) never raises it
        safe = torch.where(absmax > 0, absmax, torch.ones_like(absmax))
        scaled = (blocks / safe[:, None]).reshape(-1)[:n]
        q = torch.bucketize(scaled, (code[:-1] + code[1:]) / 2)
        if signed:  # the kernel's sign rule: a code of the wrong sign moves one step over
            wrong = torch.signbit(code[q]) != torch.signbit(x)
            q = torch.where(wrong, q + torch.where(x > 0, 1, -1), q)
        return q, absmax

    def dequantize(self, q, absmax, code):
        n, b = q.numel(), self.blocksize
        return code[q] * absmax.repeat_interleave(b)[:n]

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                g = p.grad.reshape(-1).float()
                st = self.state[p]
                eight = p.numel() >= self.min_8bit_size
                if not st:
                    st["t"] = 0
                    if eight:
                        blocks = -(-p.numel() // self.blocksize)
                        st["q1"] = torch.zeros(p.numel(), dtype=torch.long)
                        st["q2"] = torch.zeros(p.numel(), dtype=torch.long)
                        st["a1"], st["a2"] = torch.zeros(blocks), torch.zeros(blocks)
                    else:
                        st["m"], st["v"] = torch.zeros_like(g), torch.zeros_like(g)
                st["t"] += 1
                t = st["t"]
                c1 = torch.tensor(1 - b1 ** t, dtype=torch.float32)
                c2 = torch.tensor(1 - b2 ** t, dtype=torch.float32).sqrt()
                step_size = -lr * c2 / c1
                if eight:
                    m = self.dequantize(st["q1"], st["a1"], self.code1) * b1 + (1 - b1) * g
                    v = self.dequantize(st["q2"], st["a2"], self.code2) * b2 + (1 - b2) * g * g
                else:
                    m = st["m"] * b1 + (1 - b1) * g
                    v = st["v"] * b2 + (1 - b2) * (g * g)
                w = p.reshape(-1).float()
                w = w + step_size * (m / (v.sqrt() + eps * c2))
                if wd > 0:
                    w = w * (1 - lr * wd)
                p.copy_(w.reshape(p.shape).to(p.dtype))
                if eight:
                    st["q1"], st["a1"] = self.quantize(m, self.code1, True)
                    st["q2"], st["a2"] = self.quantize(v, self.code2, False)
                else:
                    st["m"], st["v"] = m, v


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
    if spec["name"] == "lamb":
        return Lamb(params, lr=spec["lr"], betas=tuple(spec["betas"]), eps=spec["eps"],
                    weight_decay=spec["weight_decay"])
    if spec["name"] == "adamw8bit":
        opt = AdamW8bit(params, lr=spec["lr"], betas=tuple(spec["betas"]), eps=spec["eps"],
                        weight_decay=spec["weight_decay"], blocksize=spec["blocksize"],
                        min_8bit_size=spec["min_8bit_size"])
        for mine, theirs in ((opt.code1, spec["code_signed"]), (opt.code2, spec["code_unsigned"])):
            diff = (mine - torch.tensor(theirs, dtype=torch.float32)).abs().max().item()
            print("dynamic map: bitsandbytes' construction vs the engine's, largest difference "
                  "%.3e" % diff)
        return opt
    raise ValueError("unknown optimizer " + spec["name"])


def transformer_forward(params, model, x):
    """The manifest's pre-LayerNorm transformer on x [batch, seq, input_dim]: per-token
    logits [batch * seq, classes], written with torch's own modules' maths (layer_norm,
    softmax) and nothing of the engine's, and the mixture of experts' load-balancing loss
    (0 for dense MLPs)."""
    batch, seq, _ = x.shape
    width, heads = model["width"], model["heads"]
    d = width // heads
    causal = torch.ones(seq, seq, dtype=torch.bool).tril()
    h = x @ params["input.w"] + params["input.b"]  # [batch, seq, width]
    aux = torch.zeros(())
    for l in range(model["layers"]):
        p = "block%d." % l
        a = F.layer_norm(h, (width,), params[p + "ln1.g"], params[p + "ln1.b"], eps=1e-5)

        def split(t):  # [batch, seq, width] -> [batch, heads, seq, d]
            return t.reshape(batch, seq, heads, d).transpose(1, 2)

        q = split(a @ params[p + "wq"] + params[p + "bq"])
        k = split(a @ params[p + "wk"])  # no key bias
        v = split(a @ params[p + "wv"] + params[p + "bv"])
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d)
        scores = scores.masked_fill(~causal, float("-inf"))
        attn = torch.softmax(scores, dim=-1) @ v  # [batch, heads, seq, d]
        attn = attn.transpose(1, 2).reshape(batch, seq, width)
        h = h + (attn @ params[p + "wo"] + params[p + "bo"])
        m = F.layer_norm(h, (width,), params[p + "ln2.g"], params[p + "ln2.b"], eps=1e-5)
        if model.get("experts", 0):
            out, block_aux = moe_forward(params, model, p, m)
            h = h + out
            aux = aux + block_aux
            continue
        inner = F.gelu(m @ params[p + "w1"] + params[p + "b1"], approximate="tanh")
        h = h + (inner @ params[p + "w2"] + params[p + "b2"])
    logits = h @ params["head.w"] + params["head.b"]
    return logits.reshape(batch * seq, -1), aux


def moe_forward(params, model, p, m):
    """The manifest's moe_note on m [batch, seq, width]: the gated sum of each token's kept
    experts, and the block's load-balancing loss (mean over sequences). The routing (which
    choices are kept) is a discrete decision made from the probabilities, as in the engine."""
    batch, seq, width = m.shape
    experts, top_k, capacity = model["experts"], model["top_k"], model["capacity"]
    probs = torch.softmax(m @ params[p + "router"], dim=-1)  # [batch, seq, experts]
    # Top-k by probability, ties to the lower index (a stable descending sort).
    order = torch.sort(probs.detach(), dim=-1, descending=True, stable=True).indices[..., :top_k]
    kept = torch.zeros(batch, seq, top_k, dtype=torch.bool)
    for b in range(batch):
        filled = [0] * experts
        for j in range(top_k):
            for t in range(seq):
                e = int(order[b, t, j])
                if filled[e] < capacity:
                    filled[e] += 1
                    kept[b, t, j] = True
    out = torch.zeros_like(m)
    for e in range(experts):
        q = p + "expert%d." % e
        y = F.gelu(m @ params[q + "w1"] + params[q + "b1"], approximate="tanh")
        y = y @ params[q + "w2"] + params[q + "b2"]
        for j in range(top_k):
            mask = (kept[..., j] & (order[..., j] == e)).unsqueeze(-1)
            out = out + torch.where(mask, probs[..., e:e + 1] * y, torch.zeros_like(y))
    # f_e: the share of the sequence's choices that picked e (a count: no gradient).
    f = torch.zeros(batch, experts)
    for j in range(top_k):
        f += F.one_hot(order[..., j], experts).sum(dim=1).double()
    f = f / (seq * top_k)
    P = probs.mean(dim=1)  # [batch, experts]
    aux = model["aux_loss_weight"] * experts * (f * P).sum(dim=-1).mean()
    return out, aux


def quantize_chunks(flat, units, R, group):
    """ZeRO++'s int8 groups: each unit's flat range [begin, end) split into the R ranks' chunks
    [begin + n r / R, begin + n (r + 1) / R), each chunk quantized in groups (float32: scale =
    absmax / 127, code = round-half-even(x / scale) clamped to +-127), dequantized."""
    out = flat.clone()
    for begin, end in units:
        n = end - begin
        for r in range(R):
            lo, hi = begin + n * r // R, begin + n * (r + 1) // R
            for g in range(lo, hi, group):
                chunk = flat[g:min(hi, g + group)]
                absmax = chunk.abs().max()
                if absmax == 0:
                    continue
                scale = absmax / torch.tensor(127.0, dtype=torch.float32)
                out[g:min(hi, g + group)] = torch.clamp(torch.round(chunk / scale), -127, 127) * scale
    return out


def quantized_weights(params, manifest):
    """ZeRO++'s qwZ as the manifest's quantized_weights says: each unit's flat parameters
    quantized by quantize_chunks; the gradient passes straight through to the exact parameters
    (the engine applies it to the unquantized shard)."""
    qw = manifest["quantized_weights"]
    names = [t["name"] for t in manifest["tensors"]]
    flat = torch.cat([params[n].detach().reshape(-1) for n in names]).float()
    out = quantize_chunks(flat, qw["units"], qw["ranks"], qw["group"])
    used, at = {}, 0
    for n in names:
        k = params[n].numel()
        q = out[at:at + k].double().reshape(params[n].shape)
        used[n] = params[n] + (q - params[n]).detach()
        at += k
    return used


def quantized_gradients(params, manifest, forward, x, y):
    """ZeRO++'s qgZ as the manifest's quantized_gradients says: each rank's gradient of its
    slice of the batch (its tokens' summed loss over the global token count) quantized by
    quantize_chunks, and the ranks' dequantized gradients summed in float32, in rank order, as
    the gradients of the step."""
    qg = manifest["quantized_gradients"]
    names = [t["name"] for t in manifest["tensors"]]
    R, B, count = qg["ranks"], x.shape[0], y.numel()
    total = None
    for r in range(R):
        lo, hi = B * r // R, B * (r + 1) // R
        for n in names:
            params[n].grad = None
        logits = forward(x[lo:hi])
        (F.cross_entropy(logits, y[lo:hi], reduction="sum") / count).backward()
        flat = torch.cat([params[n].grad.reshape(-1) for n in names]).float()
        q = quantize_chunks(flat, qg["units"], R, qg["group"])
        total = q if total is None else total + q
    at = 0
    for n in names:
        k = params[n].numel()
        params[n].grad = total[at:at + k].double().reshape(params[n].shape)
        at += k


def replay(dump_dir):
    with open(os.path.join(dump_dir, "manifest.json")) as f:
        manifest = json.load(f)
    params = {t["name"]: read_npy(os.path.join(dump_dir, t["file"])).double().requires_grad_()
              for t in manifest["tensors"]}
    model = manifest["model"]
    layers = model["layers"]
    optimizer = make_optimizer(manifest["optimizer"], list(params.values()))
    losses = []
    for batch in manifest["batches"]:
        x = read_npy(os.path.join(dump_dir, batch["x"])).double()
        y = read_npy(os.path.join(dump_dir, batch["y"])).long()
        aux = 0.0
        P = quantized_weights(params, manifest) if manifest.get("quantized_weights") else params
        def mlp_forward(xs):
            h = xs @ P["input.w"] + P["input.b"]
            for l in range(layers):
                p = "block%d." % l
                inner = F.gelu(h @ P[p + "w1"] + P[p + "b1"], approximate="tanh")
                h = h + (inner @ P[p + "w2"] + P[p + "b2"])
            return h @ P["head.w"] + P["head.b"]
        if model.get("kind", "mlp") == "transformer":
            if manifest.get("quantized_gradients"):
                raise ValueError("this replay applies qgZ to the MLP model only")
            logits, aux = transformer_forward(P, model, x)
            y = y.reshape(-1)
        else:
            logits = mlp_forward(x)
        loss = F.cross_entropy(logits, y)  # mean over the global batch (every token)
        losses.append(loss.item())
        optimizer.zero_grad()
        if manifest.get("quantized_gradients"):  # each rank's gradient quantized, then summed
            quantized_gradients(params, manifest, mlp_forward, x, y)
        else:
            (loss + aux).backward()  # the reported loss is the cross-entropy alone
        if manifest.get("loss_reduction"):  # per-replica means summed over the replicas
            for p in params.values():
                p.grad *= manifest["loss_reduction"]["gradient_multiplier"]
        if manifest.get("clip_grad_norm"):
            torch.nn.utils.clip_grad_norm_(list(params.values()),
                                           manifest["clip_grad_norm"]["max_norm"])
        optimizer.step()
    return manifest, losses


# --noise-floor: the relative perturbation given to every value before its bf16 cast (None: off).
PERTURB = None


# The 16-bit type a mixed-precision replay stores tensors in (bf16-mixed or fp16-mixed).
STORE_DTYPE = torch.bfloat16


def store(t, dtype=None):
    """A 16-bit store: round to nearest even (torch's cast; fp16 overflows to inf past 65504),
    held in fp32 as the engine holds it. STORE_DTYPE None (an fp32 run): unchanged."""
    dtype = dtype or STORE_DTYPE
    if dtype is None:
        return t
    if PERTURB is not None:  # fp32-rounding-sized noise: another summation order's result
        t = t * (1 + PERTURB * torch.randn_like(t))
    return t.to(dtype).to(torch.float32)


# A DDP compression hook's 16-bit type (fp16_compress_hook, bf16_compress_hook), or None.
REDUCE_DTYPE = None


def gelu_tanh_grad(a):
    """d/da of GPT-2's tanh GELU, in float64 then fp32 (the engine's kernel errs by ~2e-7)."""
    x = a.double()
    c = math.sqrt(2.0 / math.pi)
    t = torch.tanh(c * (x + 0.044715 * x ** 3))
    return (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)).float()


# tf32_products (TF32: 10 mantissa bits) or bf16_products (float32_matmul_precision 'medium':
# bf16): every matrix product's inputs rounded first, to nearest even.
TF32 = False
BF16_PRODUCTS = False


def tf32(t):
    """float32 rounded to TF32 by its bits, as the engine's round_to_tf32."""
    u = t.contiguous().view(torch.int32).to(torch.int64) & 0xffffffff
    r = ((u + 0xfff + ((u >> 13) & 1)) & 0xffffe000)
    r = torch.where((u & 0x7fffffff) > 0x7f800000, torch.full_like(u, 0x7fc00000), r)
    r = r - ((r >> 31) & 1) * (1 << 32)  # back to a signed 32-bit pattern
    return r.to(torch.int32).view(torch.float32)


def mm(a, b):
    """A matrix product in float32; with TF32 its inputs rounded first, the sum in fp32."""
    if BF16_PRODUCTS:
        return a.to(torch.bfloat16).float() @ b.to(torch.bfloat16).float()
    return tf32(a) @ tf32(b) if TF32 else a @ b


def fp8_round(t, encoding):
    """float32 rounded to FP8 (E4M3 or E5M2) to nearest even, saturating at the largest finite
    value (TE's satfinite casts); NaN kept. Written from the encodings' definitions (1.13 has
    no float8 dtype): the quantum is 2^(floor(log2 |t|) - mantissa bits), never below the
    smallest subnormal's."""
    mant, min_exp, largest = (3, -6, 448.0) if encoding == "E4M3" else (2, -14, 57344.0)
    a = t.abs()
    _, e = torch.frexp(a)  # a = m 2^e, m in [0.5, 1): floor(log2 a) = e - 1
    e = torch.clamp(e - 1, min=min_exp)
    quantum = torch.ldexp(torch.ones_like(a), e - mant)
    r = torch.clamp(torch.round(a / quantum) * quantum, max=largest)  # round: half to even
    return torch.where(torch.isnan(t), t, torch.copysign(r, t))


class Fp8State:
    """Transformer Engine's DelayedScaling for one replica, as the manifest's precision.fp8
    states it: per tensor (block, role) a float32 scale (1 at first) and an amax history."""

    def __init__(self, recipe):
        self.recipe = recipe
        self.scale, self.history = {}, {}

    def encoding(self, role):
        return "E5M2" if role >= 4 and self.recipe["format"] == "hybrid" else "E4M3"

    def cast(self, block, role, v):
        key = (block, role)
        if key not in self.scale:
            self.scale[key] = torch.tensor(1.0, dtype=torch.float32)
            self.history[key] = torch.zeros(self.recipe["amax_history_len"], dtype=torch.float32)
        h = self.history[key]
        h[0] = torch.maximum(h[0], v.abs().max())
        s = self.scale[key]
        return fp8_round(v * s, self.encoding(role)), s

    def recast(self, role, v, s):
        return fp8_round(v * s, self.encoding(role))

    def update(self, forward):
        for key in self.scale:
            if (key[1] < 4) != forward:
                continue
            h = self.history[key]
            amax = h.max() if self.recipe["amax_compute_algo"] == "max" else h[0].clone()
            if amax > 0 and torch.isfinite(amax):
                largest = torch.tensor(448.0 if self.encoding(key[1]) == "E4M3" else 57344.0)
                self.scale[key] = (largest / amax) / torch.tensor(2.0 ** self.recipe["margin"])
            self.history[key] = torch.roll(h, -1)
            self.history[key][0] = 0.0


def forward_backward_mixed(P, x, y, layers, batch, loss_scale=1.0, fp8=None):
    """One forward and backward of rows x (bf16 inputs) with the bf16 parameters P: the summed
    loss (fp32 from bf16 logits, summed in float64 as the engine does) and the bf16 gradients
    of the mean over the global `batch`. With `fp8` (an Fp8State) each block's two products
    take FP8 operands as the manifest's precision.fp8 rule says."""
    h = store(mm(x, P["input.w"]) + P["input.b"])
    saved = []
    for l in range(layers):
        p = "block%d." % l
        if fp8 is None:
            pre = store(mm(h, P[p + "w1"]) + P[p + "b1"])
            post = store(F.gelu(pre, approximate="tanh"))
            partial = store(mm(post, P[p + "w2"]))
            saved.append((h, pre, post))
        else:
            qx, s0 = fp8.cast(l, 0, h)
            qw, s1 = fp8.cast(l, 1, P[p + "w1"])
            pre = store((qx @ qw) * ((1 / s0) * (1 / s1)) + P[p + "b1"])
            post = store(F.gelu(pre, approximate="tanh"))
            qp, s2 = fp8.cast(l, 2, post)
            qw, s3 = fp8.cast(l, 3, P[p + "w2"])
            partial = store((qp @ qw) * ((1 / s2) * (1 / s3)))
            saved.append((h, pre, post, (s0, s1, s2, s3)))
        h = store(partial + (P[p + "b2"] + h))
    logits = store(mm(h, P["head.w"]) + P["head.b"])
    if fp8 is not None:
        fp8.update(True)
    loss_sum = F.cross_entropy(logits.double(), y, reduction="sum").item()
    probs = torch.softmax(logits.double(), dim=1).float()
    onehot = F.one_hot(y, probs.shape[1]).float()
    dlogits = store((probs - onehot) * (1.0 / batch) * loss_scale)
    grads = {"head.w": store(mm(h.t(), dlogits)), "head.b": store(dlogits.sum(0))}
    dh = store(mm(dlogits, P["head.w"].t()))
    for l in reversed(range(layers)):
        p = "block%d." % l
        if fp8 is not None:
            h_in, pre, post, (s0, s1, s2, s3) = saved[l]
            dout = dh
            qdy, sdy = fp8.cast(l, 4, dout)
            qp, qw = fp8.recast(2, post, s2), fp8.recast(3, P[p + "w2"], s3)
            grads[p + "w2"] = store((qp.t() @ qdy) * ((1 / s2) * (1 / sdy)))
            grads[p + "b2"] = store(dout.sum(0))
            dpost = store((qdy @ qw.t()) * ((1 / sdy) * (1 / s3)))
            dpre = store(gelu_tanh_grad(pre) * dpost)
            qdy, sdy = fp8.cast(l, 5, dpre)
            qx, qw = fp8.recast(0, h_in, s0), fp8.recast(1, P[p + "w1"], s1)
            grads[p + "w1"] = store((qx.t() @ qdy) * ((1 / s0) * (1 / sdy)))
            grads[p + "b1"] = store(dpre.sum(0))
            dh = store(store((qdy @ qw.t()) * ((1 / sdy) * (1 / s1))) + dout)
            continue
        h_in, pre, post = saved[l]
        dout = dh
        grads[p + "w2"] = store(mm(post.t(), dout))
        grads[p + "b2"] = store(dout.sum(0))
        dpost = store(mm(dout, P[p + "w2"].t()))
        dpre = store(gelu_tanh_grad(pre) * dpost)
        grads[p + "w1"] = store(mm(h_in.t(), dpre))
        grads[p + "b1"] = store(dpre.sum(0))
        dh = store(store(mm(dpre, P[p + "w1"].t())) + dout)
    grads["input.w"] = store(mm(x.t(), dh))
    grads["input.b"] = store(dh.sum(0))
    if fp8 is not None:
        fp8.update(False)
    return loss_sum, grads


def reduce_mixed(flat_grads, reduction):
    """The replicas' flat bf16 gradients summed as the manifest's gradient_reduction says,
    rounding every partial sum."""
    R = reduction["replicas"]
    out = torch.empty_like(flat_grads[0])
    for begin, end in reduction["buckets"]:
        n = end - begin
        for c in range(R):
            lo, hi = begin + c * n // R, begin + (c + 1) * n // R
            order = list(range(R)) if reduction["order"] == "sequential" else \
                [(c + k) % R for k in range(1, R + 1)]
            acc = store(flat_grads[order[0]][lo:hi], REDUCE_DTYPE)
            for r in order[1:]:
                acc = store(acc + store(flat_grads[r][lo:hi], REDUCE_DTYPE), REDUCE_DTYPE)
            out[lo:hi] = acc
    return out


def powersgd_reduce(flat, ps, state, step, dump_dir):
    """torch's powerSGD_hook over the replicas' flat gradients (each the engine's: divided by
    the replica count), bucket by bucket as the manifest's powersgd section lists them; `state`
    keeps the error feedback and the warm-start Qs between steps. Returns the averaged result
    every replica ends with."""
    from torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import _orthogonalize
    R = len(flat)
    out = torch.empty_like(flat[0])
    random_q = {(q["step"], q["bucket"], q["tensor"]): q["file"] for q in ps["random_q"]}
    for bi, b in enumerate(ps["buckets"]):
        lo, hi = b["begin"], b["end"]
        inputs = [f[lo:hi] * R for f in flat]  # each replica's own mean gradient, as DDP's
        if ps["error_feedback"]:
            if bi in state["error"]:
                inputs = [x + e for x, e in zip(inputs, state["error"][bi])]
            copies = [x.clone() for x in inputs]
        result = inputs[0].clone()

        def part(x, t):
            return x[t["offset"] - lo:t["offset"] - lo + t["count"]]
        whole = [t for t in b["tensors"] if not t["compress"]]
        if whole:
            total = sum(torch.cat([part(x, t) for t in whole]) for x in inputs) / R
            at = 0
            for t in whole:
                part(result, t).copy_(total[at:at + t["count"]])
                at += t["count"]
        for k, t in enumerate(b["tensors"]):
            if not t["compress"]:
                continue
            if not ps["warm_start"] or (bi, k) not in state["q"]:
                q = read_npy(os.path.join(dump_dir, random_q[(step, bi, k)])).float()
            else:
                q = state["q"][(bi, k)].clone()
            q = q.unsqueeze(0)
            _orthogonalize(q)
            # torch's M is the Linear weight [out, in]: the engine's [in, out] transposed.
            Ms = [part(x, t).view(t["m"], t["n"]).t() for x in inputs]
            p = sum(M @ q[0] for M in Ms).unsqueeze(0)
            _orthogonalize(p)
            qn = sum(M.t() @ p[0] for M in Ms) / R
            state["q"][(bi, k)] = qn
            part(result, t).copy_((p[0] @ qn.t()).t().reshape(-1))
        if ps["error_feedback"]:
            state["error"][bi] = [c - result for c in copies]
        out[lo:hi] = result
    return out


def replay_mixed(dump_dir, manifest):
    """The bf16-mixed or fp16-mixed run with explicit casts at the manifest's rounding points:
    16-bit parameters from an fp32 master, 16-bit activations and gradients, fp32 matrix
    products and element-wise maths, fp32 loss. Forward and backward are written out (no
    autograd) so every cast sits where the engine stores a tensor. Where the manifest says how
    data-parallel replicas' gradients were summed, each replica's slice runs alone and the sums
    are rounded in the same order; otherwise (pipeline, tp, hybrid) the global batch runs at
    once. fp16: torch.amp.GradScaler's rules as the manifest's loss_scaling states them (scale
    the loss, unscale_, skip the step on inf or NaN, back off or grow the float32 scale), and
    clip_grad_norm_ after unscaling where the manifest sets it."""
    if manifest.get("quantized_weights"):
        raise ValueError("this replay applies qwZ's quantized weights to fp32 runs only")
    if manifest.get("loss_reduction"):
        raise ValueError("this replay applies loss_reduction replica_mean to fp32 runs only")
    if manifest.get("quantized_gradients"):
        raise ValueError("this replay applies qgZ's quantized gradients to fp32 runs only")
    layers = manifest["model"]["layers"]
    names = [t["name"] for t in manifest["tensors"]]
    leaves = [torch.nn.Parameter(read_npy(os.path.join(dump_dir, t["file"])).float())
              for t in manifest["tensors"]]
    no_master = manifest["precision"].get("no_master_weights", False)
    if no_master:  # the 16-bit weights are the only copy
        for leaf in leaves:
            leaf.data.copy_(store(leaf.data))
    optimizer = make_optimizer(manifest["optimizer"], leaves)
    batch = manifest["batch"]
    reduction = manifest["precision"].get("gradient_reduction")
    scaling = manifest["precision"].get("loss_scaling")
    clip = manifest.get("clip_grad_norm")
    scale = torch.tensor(float(scaling["init_scale"]) if scaling else 1.0, dtype=torch.float32)
    growth_tracker = 0
    powersgd_state = {"error": {}, "q": {}}
    recipe = manifest["precision"].get("fp8")
    fp8_states = [Fp8State(recipe) for _ in range(reduction["replicas"] if reduction else 1)] \
        if recipe else [None] * (reduction["replicas"] if reduction else 1)
    losses = []
    for step in manifest["batches"]:
        P = {n: store(leaf.detach()) for n, leaf in zip(names, leaves)}
        x = store(read_npy(os.path.join(dump_dir, step["x"])).float())
        y = read_npy(os.path.join(dump_dir, step["y"])).long()
        if reduction is None:
            loss_sum, grads = forward_backward_mixed(P, x, y, layers, batch, scale.item(),
                                                     fp8_states[0])
        else:
            R = reduction["replicas"]
            rows = batch // R
            loss_sum, flat = 0.0, []
            for r in range(R):
                part, g = forward_backward_mixed(P, x[r * rows:(r + 1) * rows],
                                                y[r * rows:(r + 1) * rows], layers, batch,
                                                scale.item(), fp8_states[r])
                loss_sum += part
                flat.append(torch.cat([g[n].reshape(-1) for n in names]))
            powersgd = manifest.get("powersgd")
            if powersgd and step["step"] >= powersgd["start_iter"]:
                summed = powersgd_reduce(flat, powersgd, powersgd_state, step["step"], dump_dir)
            else:
                summed = reduce_mixed(flat, reduction)
            grads, offset = {}, 0
            for n, leaf in zip(names, leaves):
                grads[n] = summed[offset:offset + leaf.numel()].reshape(leaf.shape)
                offset += leaf.numel()
        losses.append(loss_sum / batch)
        for n, leaf in zip(names, leaves):  # the fp32 master takes the 16-bit gradients
            leaf.grad = grads[n].clone()
        found_inf = False
        if scaling:  # GradScaler.unscale_: float32(1 / scale), as scale.double().reciprocal()
            inv_scale = torch.tensor(1.0 / scale.double().item(), dtype=torch.float32)
            for leaf in leaves:
                leaf.grad.mul_(inv_scale)
            found_inf = any(not bool(torch.isfinite(leaf.grad).all()) for leaf in leaves)
        if clip and not found_inf:
            torch.nn.utils.clip_grad_norm_(leaves, clip["max_norm"])
        if not found_inf:  # scaler.step: optimizer.step() only without inf or NaN
            optimizer.step()
            if no_master:  # the update is stored back in 16 bits
                for leaf in leaves:
                    leaf.data.copy_(store(leaf.data))
        if scaling and scaling["dynamic"]:  # scaler.update (torch._amp_update_scale_)
            if found_inf:
                scale = scale * torch.tensor(scaling["backoff_factor"], dtype=torch.float32)
                growth_tracker = 0
            else:
                growth_tracker += 1
                if growth_tracker == scaling["growth_interval"]:
                    grown = scale * torch.tensor(scaling["growth_factor"], dtype=torch.float32)
                    if bool(torch.isfinite(grown)):
                        scale = grown
                    growth_tracker = 0
    return manifest, losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump_dir")
    parser.add_argument("summary", help="the run's --summary JSON (the engine's losses)")
    parser.add_argument("--tolerance", type=float, default=None,
                        help="largest relative loss difference accepted (default 1e-5; "
                             "bf16-mixed %.0e)" % BF16_TOLERANCE)
    parser.add_argument("--abs-tolerance", type=float, default=None,
                        help="a step also passes within this absolute loss difference "
                             "(default 0; bf16-mixed %.0e)" % BF16_ABS_TOLERANCE)
    parser.add_argument("--noise-floor", action="store_true",
                        help="bf16-mixed: also replay with every value perturbed by 1e-7 "
                             "relative (fp32 rounding) before its bf16 cast, and print how far "
                             "that moves the losses: the spread any other summation order has")
    args = parser.parse_args()
    with open(os.path.join(args.dump_dir, "manifest.json")) as f:
        precision = json.load(f).get("precision", {}).get("name", "fp32")
    with open(os.path.join(args.dump_dir, "manifest.json")) as f:
        whole = json.load(f)
    hook = whole.get("comm_hook")
    global TF32, BF16_PRODUCTS
    TF32 = bool(whole["precision"].get("tf32_products"))
    BF16_PRODUCTS = bool(whole["precision"].get("bf16_products"))
    if precision in ("bf16-mixed", "fp16-mixed") or hook or whole.get("powersgd") or TF32 or \
            BF16_PRODUCTS or \
            whole["precision"].get("fp8"):
        global STORE_DTYPE, REDUCE_DTYPE
        STORE_DTYPE = {"bf16-mixed": torch.bfloat16, "fp16-mixed": torch.float16}.get(precision)
        if hook:  # an fp32 run whose gradients travel in 16 bits: replayed in float32
            REDUCE_DTYPE = {"fp16": torch.float16, "bf16": torch.bfloat16}[hook["dtype"]]
        if whole["precision"].get("reduce_dtype") == "fp32":  # FSDP2's MixedPrecisionPolicy
            REDUCE_DTYPE = torch.float32
        with open(os.path.join(args.dump_dir, "manifest.json")) as f:
            manifest, reference = replay_mixed(args.dump_dir, json.load(f))
        if args.tolerance is None:
            args.tolerance = BF16_TOLERANCE
        if args.abs_tolerance is None:
            args.abs_tolerance = BF16_ABS_TOLERANCE
        if args.noise_floor:
            global PERTURB
            torch.manual_seed(0)
            PERTURB = 1e-7
            with open(os.path.join(args.dump_dir, "manifest.json")) as f:
                _, perturbed = replay_mixed(args.dump_dir, json.load(f))
            PERTURB = None
            spread = [abs(a - b) for a, b in zip(perturbed, reference)]
            print("noise floor: a 1e-7 perturbation before each bf16 cast moves the replay's "
                  "losses by up to %.3e absolute, %.3e relative" % (
                      max(spread), max(d / max(abs(r), 1e-12) for d, r in zip(spread, reference))))
    else:
        torch.set_default_dtype(torch.float64)
        manifest, reference = replay(args.dump_dir)
        if args.tolerance is None:
            args.tolerance = 1e-5
        if args.abs_tolerance is None:
            args.abs_tolerance = 0.0
    with open(args.summary) as f:
        summary = json.load(f)
    # A NaN loss (fp16 overflow) is null in the summary JSON.
    engine = [math.nan if s["loss"] is None else s["loss"] for s in summary["steps"]]
    opt = manifest["optimizer"]
    print("%s, %s, %d steps, %s lr %.6g, schedule %s" % (
        summary.get("strategy", "?"), precision, len(engine), opt["name"], opt["lr"],
        opt["lr_schedule"]["kind"]))
    print("%5s %14s %14s %11s %11s" % ("step", "engine", "pytorch", "rel diff", "abs diff"))
    worst = worst_abs = worst_failing = 0.0
    for step, (e, r) in enumerate(zip(engine, reference)):
        finite = math.isfinite(e) and math.isfinite(r)
        both_nonfinite = not math.isfinite(e) and not math.isfinite(r)  # both overflowed
        rel = abs(e - r) / max(abs(r), 1e-12) if finite else (0.0 if both_nonfinite else math.inf)
        diff = abs(e - r) if finite else (0.0 if both_nonfinite else math.inf)
        worst = max(worst, rel)
        worst_abs = max(worst_abs, diff)
        # A step passes within the relative tolerance, or (bf16) the absolute one: once the
        # loss is near 0 it is set by logits that bf16 resolves to 2^-8 of their size.
        if diff > args.abs_tolerance:
            worst_failing = max(worst_failing, rel)
        print("%5d %14.8f %14.8f %11.2e %11.2e" % (step, e, r, rel, diff))
    if len(engine) != len(reference):
        print("step counts differ: engine %d, dump %d" % (len(engine), len(reference)))
        return 1
    print("max relative difference %.3e, max absolute %.3e (tolerance %.1e relative, or %.1e "
          "absolute)" % (worst, worst_abs, args.tolerance, args.abs_tolerance))
    return 0 if worst_failing <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
