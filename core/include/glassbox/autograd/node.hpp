#pragma once
// A node of the backward graph: a function from the gradients of an op's
// outputs (the node's inputs, one per input slot) to the gradients of the
// op's inputs (the node's outputs, one per next edge).
//
// Ownership: nodes are held by shared_ptr from tensors (grad_fn) and from the
// edges of later nodes, so a graph lives while something can reach it.
// Thread-safety: the engine may run different nodes of one graph on different
// threads, and, for graphs that share nodes (shared leaves' AccumulateGrad),
// one node from several backward passes at once; apply() must be safe for
// that. Adding edges, metadata or hooks must happen before a backward starts.
#include <cstdint>
#include <functional>
#include <vector>

#include "glassbox/autograd/device.hpp"
#include "glassbox/autograd/edge.hpp"
#include "glassbox/autograd/shape.hpp"
#include "glassbox/autograd/tensor.hpp"

namespace glassbox::autograd {

/// What the gradient arriving at an input slot must look like.
struct InputMetadata {
  Shape shape;
  int device = kCpu;
};

class Node {
 public:
  /// Runs before apply(), in registration order; may replace gradients.
  using PreHook = std::function<void(TensorList& grads)>;
  /// Runs after apply(), in registration order; may replace the results.
  using PostHook = std::function<void(TensorList& results, const TensorList& grads)>;

  /// `device` picks the ready queue (and thread) the node runs on.
  explicit Node(int device = kCpu, EdgeList next_edges = {});
  /// The same, from edges gathered in a std::vector (copied into an EdgeList).
  Node(int device, const std::vector<Edge>& next_edges);
  /// Releases the nodes behind it iteratively, so dropping a graph of any
  /// depth does not overflow the stack.
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// Gradients for next_edges() (same count, undefined where none) from the
  /// gradients of the input slots (undefined where none arrived).
  virtual TensorList apply(TensorList&& grads) = 0;
  /// A static name ("MulBackward"): used in errors, spans and NVTX ranges.
  virtual const char* name() const noexcept = 0;
  /// Frees saved state after a backward that does not keep the graph.
  virtual void release_variables() {}

  int device() const noexcept { return device_; }
  /// Later nodes run first among ready ones: a node created after another
  /// usually consumes its output. Per-thread counter, as in PyTorch.
  std::uint64_t sequence_nr() const noexcept { return sequence_nr_; }

  const EdgeList& next_edges() const noexcept { return next_edges_; }
  void add_next_edge(Edge edge) { next_edges_.push_back(std::move(edge)); }

  /// Declares the next input slot; returns its number.
  std::uint32_t add_input_metadata(const Tensor& t);
  std::size_t num_inputs() const noexcept { return num_inputs_; }
  /// Throws std::out_of_range for a slot not declared.
  const InputMetadata& input_metadata(std::uint32_t slot) const {
    return slot == 0 && num_inputs_ > 0 ? first_input_ : more_inputs_.at(slot - 1);
  }

  void add_pre_hook(PreHook hook) { pre_hooks_.push_back(std::move(hook)); }
  void add_post_hook(PostHook hook) { post_hooks_.push_back(std::move(hook)); }
  const std::vector<PreHook>& pre_hooks() const noexcept { return pre_hooks_; }
  const std::vector<PostHook>& post_hooks() const noexcept { return post_hooks_; }

 protected:
  /// For nodes that must run before everything else ready (AccumulateGrad).
  void set_sequence_nr(std::uint64_t nr) noexcept { sequence_nr_ = nr; }

 private:
  int device_;
  std::uint64_t sequence_nr_;
  EdgeList next_edges_;
  // Most nodes have one input: keeping it inline saves the engine a dependent
  // cache miss per node when it checks the gradient sent to it.
  std::uint32_t num_inputs_ = 0;
  InputMetadata first_input_;
  std::vector<InputMetadata> more_inputs_;
  std::vector<PreHook> pre_hooks_;
  std::vector<PostHook> post_hooks_;
};

}  // namespace glassbox::autograd
