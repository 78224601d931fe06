"""scripts/check-layering: the real tree passes; each kind of bad include in a small tree fails, named."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "check-layering")
REPO = os.path.join(HERE, "..", "..")

# One public header per library, as the real tree has them.
HEADERS = {
    "instrumentation/include/glassbox/metrics/registry.hpp": "",
    "core/include/glassbox/host_allocator/host_backend.hpp": '#include "glassbox/metrics/registry.hpp"\n',
    "cuda/include/glassbox/cuda/cuda_check.hpp": "#include <cuda_runtime_api.h>\n",
    "exporters/include/glassbox/exporters/resource.hpp": "",
}


def run(root):
    return subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)


class CheckLayering(unittest.TestCase):
    def tree(self, extra):
        root = tempfile.mkdtemp()
        for path, text in {**HEADERS, **extra}.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        return root

    def assert_fails(self, path, include, rule):
        result = run(self.tree({path: f"#include {include}\n"}))
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn(path, result.stderr)
        self.assertIn(rule, result.stderr)

    def test_the_repository_passes(self):
        result = run(REPO)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_a_small_clean_tree_passes(self):
        result = run(self.tree({"cuda/src/x.cpp": '#include "glassbox/host_allocator/host_backend.hpp"\n'}))
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_core_may_not_include_cuda(self):
        self.assert_fails("core/src/x.cpp", '"glassbox/cuda/cuda_check.hpp"', "core may include instrumentation, not cuda")

    def test_instrumentation_may_not_include_core(self):
        self.assert_fails("instrumentation/src/x.cpp", "<glassbox/host_allocator/host_backend.hpp>",
                          "instrumentation may include no other library, not core")

    def test_exporters_may_not_include_core(self):
        self.assert_fails("exporters/src/x.cpp", '"glassbox/host_allocator/host_backend.hpp"',
                          "exporters may include instrumentation, not core")

    def test_cuda_headers_stay_in_cuda(self):
        self.assert_fails("core/include/glassbox/x.hpp", "<cuda_runtime_api.h>", "CUDA headers are included only")
        self.assert_fails("examples/demo/x.cpp", "<cudnn.h>", "CUDA headers are included only")

    def test_nvtx_headers_stay_in_the_nvtx_wrapper(self):
        self.assert_fails("core/src/x.cpp", "<nvtx3/nvToolsExt.h>", "NVTX headers are included only")

    def test_a_relative_include_may_not_leave_its_library(self):
        root = self.tree({"cuda/src/impl.hpp": "", "core/src/x.cpp": '#include "../../cuda/src/impl.hpp"\n'})
        result = run(root)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("a relative include leaves core/", result.stderr)

    def test_an_unknown_glassbox_header_fails(self):
        self.assert_fails("core/src/x.cpp", '"glassbox/nowhere.hpp"', "no library's include/ holds this header")


if __name__ == "__main__":
    unittest.main()
