#pragma once
// Activation checkpointing, as torch.utils.checkpoint (reentrant variant):
// the forward runs without recording a graph and keeps only the inputs; the
// backward recomputes `fn` with grad mode on and backpropagates through the
// recomputed segment with a nested (reentrant) Engine::execute.
#include <functional>

#include "glassbox/autograd/tensor.hpp"

namespace glassbox::autograd {

/// Must compute the same thing each call: it runs again in backward.
using CheckpointFn = std::function<TensorList(const TensorList&)>;

TensorList checkpoint(CheckpointFn fn, const TensorList& inputs);

}  // namespace glassbox::autograd
