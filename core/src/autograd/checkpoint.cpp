#include "glassbox/autograd/checkpoint.hpp"

#include <algorithm>
#include <string>

#include "glassbox/autograd/engine.hpp"
#include "glassbox/error.hpp"
#include "op_support.hpp"

namespace glassbox::autograd {

namespace {

// Recomputes the segment from its saved inputs and backpropagates through it
// with a reentrant execute, which returns the inputs' gradients and gives the
// weights the segment closes over theirs as the running pass does.
class CheckpointBackward final : public Node {
 public:
  CheckpointBackward(int device, EdgeList edges, CheckpointFn fn, const TensorList& inputs)
      : Node(device, std::move(edges)), fn_(std::move(fn)) {
    for (const Tensor& t : inputs) {
      saved_.emplace_back(t);
      requires_grad_.push_back(t.requires_grad());
    }
  }

  TensorList apply(TensorList&& grads) override {
    TensorList inputs;
    std::vector<Edge> wanted;
    for (std::size_t i = 0; i < saved_.size(); ++i) {
      Tensor t = saved_[i].unpack(name()).detach();
      t.set_requires_grad(requires_grad_[i]);
      wanted.push_back(gradient_edge(t));
      inputs.push_back(std::move(t));
    }
    TensorList outs;
    {
      GradModeGuard recording(true);
      outs = fn_(inputs);
    }
    if (outs.size() != grads.size()) {
      throw Error("checkpoint: the recomputed function returned " + std::to_string(outs.size()) +
                  " outputs, the first run " + std::to_string(grads.size()));
    }
    std::vector<Edge> roots;
    TensorList root_grads;
    for (std::size_t j = 0; j < outs.size(); ++j) {
      Edge e = gradient_edge(outs[j]);
      if (!e.valid() || !grads[j].defined()) continue;
      roots.push_back(std::move(e));
      root_grads.push_back(std::move(grads[j]));
    }
    if (roots.empty()) return TensorList(inputs.size());
    return Engine::current().execute_reentrant(roots, std::move(root_grads), wanted);
  }

  const char* name() const noexcept override { return "CheckpointBackward"; }

  void release_variables() override {
    for (SavedTensor& s : saved_) s.release();
  }

 private:
  CheckpointFn fn_;
  std::vector<SavedTensor> saved_;
  std::vector<bool> requires_grad_;
};

}  // namespace

TensorList checkpoint(CheckpointFn fn, const TensorList& inputs) {
  if (!GradMode::is_enabled()) return fn(inputs);
  bool inputs_need_grad = std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.requires_grad(); });
  TensorList outs;
  {
    // With no input needing grad, only a recorded run tells whether the
    // outputs depend on a leaf `fn` closes over; its graph is dropped below.
    GradModeGuard recording(!inputs_need_grad);
    outs = fn(inputs);
  }
  bool outs_need_grad = std::any_of(outs.begin(), outs.end(), [](const Tensor& t) { return t.requires_grad(); });
  if (!inputs_need_grad && !outs_need_grad) return outs;
  if (outs.empty()) throw Error("checkpoint: the function returned no tensors");
  EdgeList edges;
  edges.reserve(inputs.size());
  for (const Tensor& t : inputs) edges.push_back(gradient_edge(t));
  auto node = detail::make_pooled<CheckpointBackward>(outs[0].device(), std::move(edges), std::move(fn), inputs);
  TensorList result;
  for (const Tensor& o : outs) {
    detail::check_defined("checkpoint", o);
    // A fresh handle: the function may have returned one of its inputs.
    Tensor r = o.detach();
    detail::set_history(r, node);
    result.push_back(std::move(r));
  }
  return result;
}

}  // namespace glassbox::autograd
