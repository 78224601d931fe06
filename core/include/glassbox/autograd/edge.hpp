#pragma once
// An edge of the backward graph: where one gradient goes, as (node, input slot).
#include <cstdint>
#include <memory>

namespace glassbox::autograd {

class Node;

struct Edge {
  /// Shared: a node lives as long as some edge or tensor points at it.
  std::shared_ptr<Node> function;
  /// Which of the node's inputs (gradients of its forward outputs) this feeds.
  std::uint32_t input_nr = 0;

  /// An edge with no node: the tensor needs no gradient.
  bool valid() const noexcept { return function != nullptr; }
};

}  // namespace glassbox::autograd
