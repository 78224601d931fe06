"""A pytest plugin that installs glassbox's pinned-host allocator as PyTorch's
before any test module is imported: `pytest -p glassbox_pytest_plugin ...`
runs PyTorch's own tests (test_cuda.py) on it (scripts/gpu-torch)."""
import glassbox_torch

glassbox_torch.install()


def pytest_report_header(config):
    return "glassbox_torch: installed as PyTorch's CUDA host allocator"
