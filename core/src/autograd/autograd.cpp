#include "glassbox/autograd/autograd.hpp"

#include <string>

#include "glassbox/autograd/accumulate_grad.hpp"
#include "glassbox/error.hpp"

namespace glassbox::autograd {

namespace {

std::vector<Edge> root_edges(const TensorList& roots) {
  std::vector<Edge> edges;
  edges.reserve(roots.size());
  for (const Tensor& t : roots) edges.push_back(gradient_edge(t));
  return edges;
}

// torch's rule: a gradient of 1 is implied only for one-element roots.
TensorList implied_grads(const TensorList& roots, TensorList grads) {
  if (!grads.empty()) return grads;
  for (std::size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].defined() || roots[i].numel() != 1) {
      throw Error("a gradient can be implied only for one-element roots; root " + std::to_string(i) + " has shape " +
                  (roots[i].defined() ? roots[i].shape().str() : "undefined") + ": pass its gradient");
    }
    grads.push_back(Tensor::ones(roots[i].shape(), roots[i].device()));
  }
  return grads;
}

Engine& pick(Engine* engine) { return engine ? *engine : Engine::current(); }

}  // namespace

void backward(const TensorList& roots, TensorList grads, BackwardOptions options) {
  pick(options.engine).execute(root_edges(roots), implied_grads(roots, std::move(grads)), options.keep_graph);
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, TensorList grad_outputs, GradOptions options) {
  std::vector<Edge> wanted;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) throw Error("grad: input " + std::to_string(i) + " does not require grad");
    wanted.push_back(gradient_edge(inputs[i]));
  }
  TensorList result =
      pick(options.engine)
          .execute(root_edges(outputs), implied_grads(outputs, std::move(grad_outputs)), options.keep_graph, wanted);
  for (std::size_t i = 0; i < result.size() && !options.allow_unused; ++i) {
    if (!result[i].defined()) {
      throw Error("grad: input " + std::to_string(i) +
                  " is not reached from the outputs; pass allow_unused=true to get an undefined gradient");
    }
  }
  return result;
}

}  // namespace glassbox::autograd
