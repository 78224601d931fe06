#!/usr/bin/env python3
"""Both sides of the glassbox_torch comparison, through PyTorch's own API: with
PyTorch's pinned-host allocator, or with glassbox's installed
(glassbox_torch.install()); one side per process, as install cannot be undone.

usage: pinned_dataloader.py --allocator pytorch|glassbox [--steps 150] [--workers 4]
                            [--rep-seconds 0.2] [--reps 5]

Rows, one JSON line each on stdout in the format scripts/compare-table reads
({"side","metric","threads","calls_per_second","ns_per_call"}):

- dataloader_pinned_step @W thr: a training loop whose DataLoader (W workers,
  pin_memory=True) pins each batch of 64 images [3, 64, 64] and labels; each
  step copies the batch to the GPU without blocking, runs a small CNN forward
  and backward and an SGD step, and reads the loss. Steps per second over
  --steps steps after 20 warm-up steps.
- torch_pinned_empty: torch.empty(64 KiB, pin_memory=True) and its free.
- torch_pin_memory: a 64 KiB tensor's pin_memory() and the copy's free.
- torch_pinned_copy_record: a pinned 64 KiB tensor, a non_blocking copy of it
  to the GPU (record_event), its free: the path a DataLoader batch takes.
  Each of the three: the median of --reps repetitions sized to --rep-seconds
  (training_step.py's median_steps_per_second).

On stderr, one JSON line {"side", "stats": ...} after the loop: PyTorch's
host_memory_stats() (host_alloc_time is the time spent in cudaHostAlloc /
cudaHostRegister), and for glassbox what /metrics showed: pinned bytes
reserved and active, requests, cache hits and their ratio, pending events.
"""
import argparse
import json
import re
import sys
import time
import urllib.request

import torch
import torch.nn.functional as F
from training_step import median_steps_per_second  # timing as the training-step comparison's

KIB64 = 64 << 10


def report(side, metric, threads, rate):
    print(json.dumps({"side": side, "metric": metric, "threads": threads, "calls_per_second": rate,
                      "ns_per_call": 1e9 / rate}), flush=True)


def api_rows(side, args):
    dev = torch.empty(KIB64 // 4, device="cuda")
    page = torch.randn(KIB64 // 4)

    def pinned_empty():
        torch.empty(KIB64, dtype=torch.uint8, pin_memory=True)

    def pin_memory():
        page.pin_memory()

    def copy_record():
        dev.copy_(torch.empty(KIB64 // 4, pin_memory=True), non_blocking=True)

    for metric, fn in (("torch_pinned_empty", pinned_empty), ("torch_pin_memory", pin_memory),
                       ("torch_pinned_copy_record", copy_record)):
        report(side, metric, 1, median_steps_per_second(fn, args.rep_seconds, args.reps))
        torch.cuda.synchronize()


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.c2 = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(32 * 16 * 16, 10)

    def forward(self, x):
        return self.fc(F.relu(self.c2(F.relu(self.c1(x)))).flatten(1))


def loop_row(side, args):
    data = torch.utils.data.TensorDataset(torch.randn(4096, 3, 64, 64), torch.randint(0, 10, (4096,)))
    loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True, num_workers=args.workers,
                                         pin_memory=True, persistent_workers=True, drop_last=True)
    model = SmallCnn().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def batches():
        while True:
            yield from loader

    it = batches()

    def step():
        x, y = next(it)
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(20):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    report(side, "dataloader_pinned_step", args.workers, args.steps / (time.perf_counter() - start))


def metric_sum(text, name):
    return sum(float(v) for v in re.findall(r"^%s(?:\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M))


def stats(side, metrics_url):
    s = {"host_memory_stats": {k: v for k, v in torch.cuda.host_memory_stats().items()
                               if k.startswith(("allocated_bytes", "active_bytes", "num_host", "host_alloc_time"))}}
    if metrics_url:
        text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
        requests = metric_sum(text, "glassbox_host_alloc_requests_total")
        hits = metric_sum(text, "glassbox_host_alloc_cache_hits_total")
        s["metrics"] = {"pinned_reserved_bytes": metric_sum(text, "glassbox_host_memory_reserved_bytes"),
                        "pinned_active_bytes": metric_sum(text, "glassbox_host_memory_active_bytes"),
                        "requests": requests, "cache_hits": hits, "hit_ratio": hits / requests if requests else None,
                        "pending_events": metric_sum(text, "glassbox_host_pending_events")}
    print(json.dumps({"side": side, "stats": s}), file=sys.stderr, flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--allocator", choices=("pytorch", "glassbox"), required=True)
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--rep-seconds", type=float, default=0.2)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("pinned_dataloader.py: no CUDA device", file=sys.stderr)
        return 1
    metrics_url = ""
    if args.allocator == "glassbox":
        import glassbox_torch

        metrics_url = glassbox_torch.install(metrics_addr="127.0.0.1:0")["metrics_url"]
    torch.ones(1, device="cuda").sum().item()
    api_rows(args.allocator, args)
    loop_row(args.allocator, args)
    stats(args.allocator, metrics_url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
