#pragma once
// Activation checkpointing, as torch.utils.checkpoint (reentrant variant):
// the forward runs without recording a graph and keeps only the inputs; the
// backward recomputes `fn` with grad mode on and backpropagates through the
// recomputed segment with a nested Engine::execute_reentrant. (When no input
// requires grad, the forward is recorded, since only that tells whether the
// outputs depend on a leaf `fn` closes over, and the recorded graph dropped.)
//
// Leaves `fn` closes over instead of taking as inputs (a block's weights)
// get their gradients as well: accumulated into grad under backward(), in
// the result under grad() when it asks for them. A tensor with a history
// that `fn` closes over is reached by the nested pass, which runs (and
// frees) the nodes that made it; if the outer pass needs those nodes too it
// fails, saying they were freed: pass such a tensor as an input instead.
#include <functional>

#include "glassbox/autograd/tensor.hpp"

namespace glassbox::autograd {

/// Must compute the same thing each call: it runs again in backward.
using CheckpointFn = std::function<TensorList(const TensorList&)>;

TensorList checkpoint(CheckpointFn fn, const TensorList& inputs);

}  // namespace glassbox::autograd
