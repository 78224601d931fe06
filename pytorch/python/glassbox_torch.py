"""glassbox's caching pinned-host allocator as PyTorch's, with Prometheus
metrics, spans and NVTX.

    import glassbox_torch
    glassbox_torch.install(metrics_addr="127.0.0.1:9400")

The extension (_glassbox_torch) leaves PyTorch's symbols to the libraries
`import torch` loads, so torch is imported first, here.
"""
import torch  # noqa: F401  (first: the extension binds to its libraries)

from _glassbox_torch import install, installed, shutdown, stats  # noqa: E402

__all__ = ["install", "installed", "shutdown", "stats"]
