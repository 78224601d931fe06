#!/usr/bin/env python3
"""glassbox_torch under PyTorch, on a GPU: every path by which PyTorch users get
pinned memory reaches glassbox's allocator once installed.

  PYTHONPATH=build/gpu-bundle/python python3 -m pytest -v tests/torch/test_glassbox_torch.py

(scripts/gpu-torch runs it). One process: the module first pins memory with
PyTorch's own allocator, then installs glassbox's (the install-after-use case),
so the tests share one installed allocator and each checks what it moved.
"""
import re
import unittest
import urllib.request

import torch

if not torch.cuda.is_available():
    raise unittest.SkipTest("no CUDA device")

# Pinned by PyTorch's allocator before install: must stay PyTorch's.
BEFORE = torch.empty(1 << 20, dtype=torch.uint8, pin_memory=True)
TORCH_STATS_BEFORE = torch.cuda.host_memory_stats()

import glassbox_torch  # noqa: E402

INSTALLED = glassbox_torch.install(metrics_addr="127.0.0.1:0")


def ours():
    return glassbox_torch.stats()


def scrape():
    with urllib.request.urlopen(INSTALLED["metrics_url"], timeout=10) as r:
        return r.read().decode()


def metric(text, name, labels=""):
    """Sum of the samples of `name` whose labels contain `labels`."""
    total = 0.0
    for m in re.finditer(r"^%s(\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M):
        if labels in (m.group(1) or ""):
            total += float(m.group(2))
    return total


def host_emptycache():
    """torch._C._host_emptyCache (its name in 2.11), or the public one of later releases."""
    fn = getattr(torch._C, "_host_emptyCache", None) or getattr(torch.cuda.memory, "host_empty_cache")
    fn()


def stall(stream=None):
    """Keeps `stream` busy for a while, so that an event recorded after it is still pending."""
    with torch.cuda.stream(stream or torch.cuda.current_stream()):
        torch.cuda._sleep(200_000_000)


class Install(unittest.TestCase):
    def test_installed_and_serving_metrics(self):
        self.assertTrue(glassbox_torch.installed())
        # A bucket's series appear with its first request: make one, so the
        # test does not depend on which ran before it.
        torch.empty(4096, dtype=torch.uint8, pin_memory=True)
        self.assertIn("glassbox_host_alloc_requests_total", scrape())

    def test_install_again_returns_the_same_allocator(self):
        again = glassbox_torch.install()
        self.assertEqual(again["metrics_url"], INSTALLED["metrics_url"])

    def test_memory_pinned_before_install_stays_pytorchs(self):
        # Still pinned and usable, freed into PyTorch's allocator, not ours.
        self.assertTrue(BEFORE.is_pinned())
        d = torch.empty(BEFORE.numel(), dtype=torch.uint8, device="cuda")
        d.copy_(BEFORE, non_blocking=True)  # record_event on PyTorch's block: passed on to PyTorch's
        torch.cuda.synchronize()
        self.assertGreaterEqual(TORCH_STATS_BEFORE.get("allocations.current", 1), 1)


class Paths(unittest.TestCase):
    def assert_requests(self, at_least, fn):
        before = ours()["requests"]
        result = fn()
        self.assertGreaterEqual(ours()["requests"] - before, at_least)
        return result

    def test_empty_pin_memory(self):
        t = self.assert_requests(1, lambda: torch.empty(4096, pin_memory=True))
        self.assertTrue(t.is_pinned())
        self.assertGreaterEqual(ours()["active_requests"]["current"], 1)

    def test_tensor_pin_memory(self):
        t = self.assert_requests(1, lambda: torch.arange(10000, dtype=torch.float32).pin_memory())
        self.assertTrue(t.is_pinned())
        self.assertEqual(float(t[9999]), 9999.0)

    def test_dataloader_pin_memory_worker_batches(self):
        data = torch.utils.data.TensorDataset(torch.randn(64, 32), torch.arange(64))
        loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=2, pin_memory=True)
        # Two tensors per batch, pinned by the loader's pin thread in this process.
        batches = self.assert_requests(16, lambda: list(loader))
        self.assertEqual(len(batches), 8)
        self.assertTrue(all(x.is_pinned() and y.is_pinned() for x, y in batches))

    def test_non_blocking_h2d_copy_records_an_event(self):
        host = torch.full((1 << 20,), 7.0, pin_memory=True)
        dev = torch.empty_like(host, device="cuda")
        stall()
        dev.copy_(host, non_blocking=True)  # record_event on our block
        pending_before = ours()["pending_events"]
        del host  # freed while the copy is queued: waits on its event
        self.assertGreater(ours()["pending_events"], pending_before)
        torch.cuda.synchronize()
        self.assertEqual(float(dev[-1]), 7.0)

    def test_a_freed_block_comes_back_unless_a_queued_copy_reads_it(self):
        # The behaviour test_cuda.py's pinned-memory caching test checks of
        # PyTorch's allocator, written here for ours.
        first = torch.full((256,), 1.0).pin_memory()
        ptr = first.data_ptr()
        del first
        again = torch.full((256,), 2.0).pin_memory()
        self.assertEqual(again.data_ptr(), ptr, "a freed block is reused by the next request of its size")
        dev = torch.zeros(256, device="cuda")
        stall()
        dev.copy_(again, non_blocking=True)
        del again
        later = torch.full((256,), 3.0).pin_memory()
        self.assertNotEqual(later.data_ptr(), ptr, "reused while the queued copy still reads it")
        torch.cuda.synchronize()
        self.assertEqual(float(dev[0]), 2.0)

    def test_pinning_a_non_contiguous_tensor_keeps_its_values(self):
        x = torch.arange(0, 10).view((2, 5)).t()
        self.assertTrue(torch.equal(x.pin_memory(), x))

    def test_non_blocking_d2h_copy_records_an_event(self):
        dev = torch.full((1 << 20,), 3.0, device="cuda")
        host = torch.empty(1 << 20, pin_memory=True)
        stall()
        host.copy_(dev, non_blocking=True)
        pending_before = ours()["pending_events"]
        del host
        self.assertGreater(ours()["pending_events"], pending_before)
        torch.cuda.synchronize()

    def test_non_blocking_copy_of_pageable_memory_still_works(self):
        # PyTorch calls record_event for it too; ours answers false, as
        # PyTorch's, and counts no usage error: it is no misuse.
        errors = metric(scrape(), "glassbox_host_usage_errors_total")
        pageable = torch.full((1000,), 5.0)
        dev = pageable.to("cuda", non_blocking=True)
        torch.cuda.synchronize()
        self.assertEqual(float(dev[0]), 5.0)
        self.assertEqual(metric(scrape(), "glassbox_host_usage_errors_total"), errors)

    def test_host_memory_stats_reports_ours(self):
        keep = torch.empty(3 << 20, dtype=torch.uint8, pin_memory=True)
        s, g = torch.cuda.host_memory_stats(), ours()
        self.assertEqual(s["allocations.current"], g["allocations"]["current"])
        self.assertEqual(s["allocated_bytes.current"], g["allocated_bytes"]["current"])
        self.assertEqual(s["active_requests.current"], g["active_requests"]["current"])
        self.assertEqual(s["num_host_alloc"], g["num_host_alloc"])
        # PyTorch's 1 MiB block from before install is not in it.
        self.assertGreaterEqual(s["active_bytes.current"], keep.numel())
        torch.cuda.reset_peak_host_memory_stats()
        self.assertEqual(ours()["active_bytes"]["peak"], ours()["active_bytes"]["current"])

    def test_host_empty_cache_frees_our_cached_blocks(self):
        t = torch.empty(5 << 20, dtype=torch.uint8, pin_memory=True)
        del t
        self.assertGreater(ours()["cached_bytes"], 0)
        frees = ours()["num_host_free"]
        host_emptycache()
        self.assertEqual(ours()["cached_bytes"], 0)
        self.assertGreater(ours()["num_host_free"], frees)

    def test_cuda_graph_capture_allocates_from_a_private_pool(self):
        dev = torch.zeros(1024, device="cuda")
        graph = torch.cuda.CUDAGraph()
        unrecyclable = metric(scrape(), "glassbox_host_blocks_unrecyclable_total", 'reason="captured"')
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            host = torch.full((1024,), 2.0, pin_memory=True)
            dev.copy_(host, non_blocking=True)
            del host  # freed during capture: the replay still reads it, never recycled
        graph.replay()
        torch.cuda.synchronize()
        self.assertEqual(float(dev[0]), 2.0)
        self.assertGreater(
            metric(scrape(), "glassbox_host_blocks_unrecyclable_total", 'reason="captured"'), unrecyclable
        )
        del graph  # releases the pool
        torch.cuda.synchronize()
        host_emptycache()

    def test_metrics_show_pinned_bytes_hits_and_events(self):
        keep = torch.empty(1 << 20, dtype=torch.uint8, pin_memory=True)
        text = scrape()
        self.assertGreaterEqual(metric(text, "glassbox_host_memory_active_bytes"), keep.numel())
        self.assertGreater(metric(text, "glassbox_host_alloc_requests_total"), 0)
        self.assertIn("glassbox_host_alloc_cache_hits_total", text)
        self.assertIn("glassbox_host_pending_events", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
