"""A pytest plugin that installs glassbox's pinned-host allocator as PyTorch's
before any test module is imported: `pytest -p glassbox_pytest_plugin ...`
runs PyTorch's own tests (test_cuda.py) on it (scripts/gpu-torch). The run's
summary ends with what glassbox served, so a log shows that it did."""
import glassbox_torch

glassbox_torch.install()


def pytest_report_header(config):
    return "glassbox_torch: installed as PyTorch's CUDA host allocator"


def pytest_terminal_summary(terminalreporter):
    s = glassbox_torch.stats()
    terminalreporter.write_line(
        f"glassbox_torch: installed={glassbox_torch.installed()}, requests={s['requests']}, "
        f"cache_hits={s['cache_hits']}, allocated_bytes={s['allocated_bytes']['allocated']}"
    )
