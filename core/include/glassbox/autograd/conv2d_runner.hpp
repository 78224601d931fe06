#pragma once
// Where conv2d's kernels run. conv2d hands each of its kernels (forward,
// gradient of the input, gradient of the weight) to the installed runner, so
// an application can run them inside the context its convolution library
// needs: the demo runs them inside a cuDNN state (CudnnWrapper::
// with_cudnn_state), so the state's lock, stream ordering and metrics see
// every convolution, forward and backward. Without a runner, kernels run
// inline on the calling thread.
//
// Thread-safety: set_conv2d_runner() may be called from any thread; a
// convolution uses the runner installed when its kernel starts.
#include <functional>

namespace glassbox::autograd {

/// Must call `kernel` exactly once before returning (on any thread) and let
/// what it throws propagate.
using Conv2dRunner = std::function<void(int device, const std::function<void()>& kernel)>;

/// Installs `runner` for every thread; an empty runner restores inline runs.
/// Returns the runner it replaces.
Conv2dRunner set_conv2d_runner(Conv2dRunner runner);

/// Runs `kernel` through the installed runner, or inline when there is none.
void run_conv2d_kernel(int device, const std::function<void()>& kernel);

}  // namespace glassbox::autograd
