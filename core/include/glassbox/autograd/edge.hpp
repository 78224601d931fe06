#pragma once
// An edge of the backward graph: where one gradient goes, as (node, input slot).
#include <cstdint>
#include <memory>
#include <vector>

#include "glassbox/autograd/detail/pooled.hpp"

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

/// A node's next edges (one per input of its op, so mostly one or two): from
/// the creating thread's chunk pool, as the node itself, so that a forward op
/// takes no block from the heap for them and its backward gives none back.
using EdgeList = std::vector<Edge, detail::PooledAllocator<Edge>>;

}  // namespace glassbox::autograd
