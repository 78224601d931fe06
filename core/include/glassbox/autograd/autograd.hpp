#pragma once
// The user-facing entry points, as torch.autograd.backward and
// torch.autograd.grad: tensors in, edges and gradients worked out here.
#include <vector>

#include "glassbox/autograd/engine.hpp"
#include "glassbox/autograd/tensor.hpp"

namespace glassbox::autograd {

struct BackwardOptions {
  bool keep_graph = false;
  /// Null: Engine::current().
  Engine* engine = nullptr;
};

/// Accumulates gradients of `roots` into the leaves' grad. `grads` may be
/// empty when every root has one element (implied gradient 1).
void backward(const TensorList& roots, TensorList grads = {}, BackwardOptions options = {});

struct GradOptions {
  bool keep_graph = false;
  /// Without it, an input no gradient reaches is an error.
  bool allow_unused = false;
  Engine* engine = nullptr;
};

/// Gradients of `outputs` with respect to `inputs`, leaving grad untouched;
/// runs only the nodes between them.
TensorList grad(const TensorList& outputs, const TensorList& inputs, TensorList grad_outputs = {},
                GradOptions options = {});

}  // namespace glassbox::autograd
