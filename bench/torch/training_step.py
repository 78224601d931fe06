#!/usr/bin/env python3
"""PyTorch's side of the training-step comparison: the demo's step in eager PyTorch.

usage: training_step.py [--workers 1 4 8] [--batch 32] [--rep-seconds 0.25] [--reps 5] [--device cuda]

--device cpu runs the step on the CPU, without pinned memory: a check of this
program where there is no GPU, not a comparison.

The same model and step as examples/glassbox-demo (glassbox's side is
bench/compare_training_step.cpp, which runs the demo's own train_step):

  three checkpointed blocks relu(conv2d(x, w, b, 3x3, padding 1)): 1->8
  stride 1, 8->16 stride 2, 16->16 stride 2; flatten; [n, 256] x [256, 4];
  cross-entropy; SGD (p -= lr * p.grad, then p.grad = None).

One step, for N workers: the batch of 32 images [1, 16, 16] is split into N
shards of rows n*i/N .. n*(i+1)/N; each shard's images and labels are copied
into pinned host memory and sent to the GPU without blocking (pin_memory()
then .to(non_blocking=True), as a DataLoader with pin_memory=True and
DataParallel's scatter do); N fresh threads, one per shard as DataParallel's
parallel_apply starts, run the forward and the shard's loss scaled by its
share of the batch (the row training_step_caller_thread runs its one worker on
the calling thread instead, as DataParallel runs a single replica); the main
thread sums the losses, runs one backward (each checkpointed block recomputes
itself in a reentrant backward), updates the parameters, and reads the loss
(loss.item(), which waits for the GPU).

Choices that keep the work the same as glassbox's:
- use_reentrant=True, with each block's weight and bias passed to checkpoint
  as inputs: a reentrant checkpoint gives gradients only through its inputs,
  and the first block's input (the images) needs none. glassbox's checkpoint
  reaches the weights a block closes over; the kernels run are the same.
- preserve_rng_state=False: the blocks draw no random numbers, and
  glassbox's checkpoint saves no generator state.
- FP32 without TF32 (cudnn.allow_tf32 off) and cuDNN's heuristics
  (benchmark off), as glassbox's cuDNN calls use plain FMA math and the
  heuristics' first usable algorithm.
- A fixed set of batches made before timing, as glassbox's side does: random
  images and labels (the values do not change the kernels' work).

Timing (the same as bench/torch/timing.hpp's median_steps_per_second): 20
warm-up steps, the last 10 of them timed to size a repetition at about
--rep-seconds; then --reps repetitions of that many steps, each timed with
the host clock (every step ends in loss.item(), so the GPU is done with it);
the median steps per second is printed as one JSON line per worker count, in
the format scripts/compare-table reads:

  {"side":"pytorch","metric":"training_step","threads":N,"calls_per_second":S,"ns_per_call":...}
"""
import argparse
import contextlib
import json
import statistics
import sys
import threading
import time

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

CLASSES = 4
SIZE = 16
LEARNING_RATE = 0.05
WARMUP_STEPS = 20
CALIBRATION_STEPS = 10  # the last warm-up steps, timed
MIN_STEPS_PER_REP = 10
BATCHES = 8


def uniform(shape, bound, generator, device):
    t = torch.empty(shape).uniform_(-bound, bound, generator=generator)
    return t.to(device).requires_grad_(True)


def make_parameters(device, seed=1):
    """He-uniform conv weights, zero biases and a uniform [256, classes] matrix, as SmallCnn's."""
    g = torch.Generator().manual_seed(seed)

    def conv(out_ch, in_ch):
        return uniform((out_ch, in_ch, 3, 3), (6.0 / (in_ch * 9)) ** 0.5, g, device)

    def zeros(n):
        return torch.zeros(n, device=device, requires_grad=True)

    return [conv(8, 1), zeros(8), conv(16, 8), zeros(16), conv(16, 16), zeros(16),
            uniform((256, CLASSES), (1.0 / 256) ** 0.5, g, device)]


def block(x, w, b, stride):
    return F.relu(F.conv2d(x, w, b, stride=stride, padding=1))


def forward(params, images):
    w1, b1, w2, b2, w3, b3, fc = params
    h = checkpoint(block, images, w1, b1, 1, use_reentrant=True, preserve_rng_state=False)
    h = checkpoint(block, h, w2, b2, 2, use_reentrant=True, preserve_rng_state=False)
    h = checkpoint(block, h, w3, b3, 2, use_reentrant=True, preserve_rng_state=False)
    return torch.matmul(torch.flatten(h, 1), fc)


def make_batches(n, seed=2):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn((n, 1, SIZE, SIZE), generator=g), torch.randint(0, CLASSES, (n,), generator=g))
            for _ in range(BATCHES)]


def stage(rows, device):
    """A shard's rows on `device`: through pinned host memory, without blocking the host."""
    if device.type == "cpu":
        return rows.clone()  # the --device cpu check: no pinned memory without a GPU
    return rows.pin_memory().to(device, non_blocking=True)


def train_step(params, batch, workers, device, on_caller=False):
    images, labels = batch
    n = images.shape[0]
    shards = []
    for i in range(workers):
        begin, end = n * i // workers, n * (i + 1) // workers
        if begin == end:
            continue  # more workers than rows
        shards.append((stage(images[begin:end], device), stage(labels[begin:end], device), (end - begin) / n))
    losses = [None] * len(shards)
    errors = []

    def work(i):
        try:
            with torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext():
                x, y, share = shards[i]
                losses[i] = F.cross_entropy(forward(params, x), y) * share
        except BaseException as e:  # re-raised on the main thread below
            errors.append(e)

    if on_caller and len(shards) == 1:
        work(0)  # as DataParallel runs a single replica: on the caller, no thread
    else:
        threads = [threading.Thread(target=work, args=(i,), name=f"worker-{i}") for i in range(len(shards))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]
    total = losses[0]
    for loss in losses[1:]:
        total = total + loss
    total.backward()
    with torch.no_grad():
        for p in params:
            p.add_(p.grad * -LEARNING_RATE)
            p.grad = None
    return total.item()


def median_steps_per_second(step, rep_seconds, reps):
    for _ in range(WARMUP_STEPS - CALIBRATION_STEPS):
        step()
    t0 = time.perf_counter()
    for _ in range(CALIBRATION_STEPS):
        step()
    per_step = (time.perf_counter() - t0) / CALIBRATION_STEPS
    steps = max(MIN_STEPS_PER_REP, int(rep_seconds / per_step))
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        rates.append(steps / (time.perf_counter() - t0))
    return statistics.median(rates)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4, 8], help="worker counts, each >= 1")
    parser.add_argument("--batch", type=int, default=32, help="images per step, >= 1")
    parser.add_argument("--rep-seconds", type=float, default=0.25, help="about how long one repetition runs")
    parser.add_argument("--reps", type=int, default=5, help="repetitions per worker count, >= 1")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: a check, not a comparison")
    args = parser.parse_args()
    if min(args.workers) < 1 or args.batch < 1 or args.reps < 1 or args.rep_seconds <= 0:
        sys.exit(f"training_step.py: --workers {args.workers}, --batch {args.batch}, --reps {args.reps}, "
                 f"--rep-seconds {args.rep_seconds}: workers, batch and reps must be >= 1, rep-seconds > 0")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("training_step.py: no CUDA device", file=sys.stderr)
        return 0
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device(args.device, 0) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    params = make_parameters(device)
    batches = make_batches(args.batch)
    rows = [("training_step", workers, False) for workers in args.workers]
    if 1 in args.workers:
        rows.append(("training_step_caller_thread", 1, True))
    for metric, workers, on_caller in rows:
        count = [0]
        first_loss = train_step(params, batches[0], workers, device, on_caller)

        def step():
            count[0] += 1
            return train_step(params, batches[count[0] % BATCHES], workers, device, on_caller)

        rate = median_steps_per_second(step, args.rep_seconds, args.reps)
        last_loss = step()
        print(f"training_step.py: {metric}, {workers} workers, loss {first_loss:.4f} -> {last_loss:.4f}",
              file=sys.stderr)
        print(json.dumps({"side": "pytorch", "metric": metric, "threads": workers,
                          "calls_per_second": rate, "ns_per_call": 1e9 * workers / rate}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
