#include "glassbox/autograd/node.hpp"

#include <memory>
#include <string>

#include "glassbox/error.hpp"

namespace glassbox::autograd {

namespace {
thread_local std::uint64_t next_sequence_nr = 0;
}

Node::Node(int device, std::vector<Edge> next_edges)
    : device_(device), sequence_nr_(next_sequence_nr++), next_edges_(std::move(next_edges)) {
  if (device < kCpu || device >= kMaxDevices) {
    throw Error("a node on device " + std::to_string(device) + ": devices are cpu (-1) and 0.." +
                std::to_string(kMaxDevices - 1));
  }
}

Node::~Node() {
  // The outermost destructor on this thread drains `pending`; nested ones
  // (nodes whose last owner was a node) only hand their edges over.
  thread_local std::vector<std::shared_ptr<Node>>* pending = nullptr;
  auto hand_over = [this](std::vector<std::shared_ptr<Node>>& to) {
    for (Edge& e : next_edges_) {
      if (e.function) to.push_back(std::move(e.function));
    }
  };
  if (pending != nullptr) {
    hand_over(*pending);
    return;
  }
  std::vector<std::shared_ptr<Node>> drain;
  pending = &drain;
  hand_over(drain);
  while (!drain.empty()) {
    std::shared_ptr<Node> next = std::move(drain.back());
    drain.pop_back();
  }
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
