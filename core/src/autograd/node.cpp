#include "glassbox/autograd/node.hpp"

#include <array>
#include <memory>
#include <string>

#include "glassbox/error.hpp"

namespace glassbox::autograd {

// NodeMap gives each 64-byte line of address space one home slot: nodes two
// lines or more apart leave every other home slot free in a dense graph,
// which keeps its probes short.
static_assert(sizeof(Node) >= 128, "NodeMap's home slots assume a node spans two 64-byte lines or more");

namespace {
thread_local std::uint64_t next_sequence_nr = 0;
}

Node::Node(int device, EdgeList next_edges)
    : device_(device), sequence_nr_(next_sequence_nr++), next_edges_(std::move(next_edges)) {
  if (device < kCpu || device >= kMaxDevices) {
    throw Error("a node on device " + std::to_string(device) + ": devices are cpu (-1) and 0.." +
                std::to_string(kMaxDevices - 1));
  }
}

Node::Node(int device, const std::vector<Edge>& next_edges)
    : Node(device, EdgeList(next_edges.begin(), next_edges.end())) {}

namespace {

// Nodes whose destruction the outermost ~Node on a thread still owes. Most
// graphs hand over one or two at a time: those stay on the stack, so freeing
// a node allocates nothing (a vector per node was one more malloc each).
class PendingNodes {
 public:
  void push(std::shared_ptr<Node> n) {
    if (held_ < near_.size()) {
      near_[held_++] = std::move(n);
    } else {
      far_.push_back(std::move(n));
    }
  }
  /// The last one pushed; null when none is left.
  std::shared_ptr<Node> pop() {
    if (!far_.empty()) {
      std::shared_ptr<Node> n = std::move(far_.back());
      far_.pop_back();
      return n;
    }
    return held_ == 0 ? nullptr : std::move(near_[--held_]);
  }

 private:
  std::array<std::shared_ptr<Node>, 4> near_;
  std::size_t held_ = 0;
  std::vector<std::shared_ptr<Node>> far_;
};

}  // namespace

Node::~Node() {
  // The outermost destructor on this thread drains `pending`; nested ones
  // (nodes whose last owner was a node) only hand their edges over.
  thread_local PendingNodes* pending = nullptr;
  auto hand_over = [this](PendingNodes& to) {
    for (Edge& e : next_edges_) {
      if (e.function) to.push(std::move(e.function));
    }
  };
  if (pending != nullptr) {
    hand_over(*pending);
    return;
  }
  PendingNodes drain;
  pending = &drain;
  hand_over(drain);
  while (drain.pop() != nullptr) {}
  pending = nullptr;
}

std::uint32_t Node::add_input_metadata(const Tensor& t) {
  InputMetadata m{t.shape(), t.device()};
  if (num_inputs_ == 0) {
    first_input_ = m;
  } else {
    more_inputs_.push_back(m);
  }
  return num_inputs_++;
}

}  // namespace glassbox::autograd
