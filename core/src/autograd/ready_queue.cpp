#include "glassbox/autograd/ready_queue.hpp"

#include <algorithm>

namespace glassbox::autograd {

bool runs_after(const NodeTask& a, const NodeTask& b) noexcept {
  if (a.kind != b.kind) return a.kind < b.kind;
  if (a.depth != b.depth) return a.depth < b.depth;
  return a.sequence_nr < b.sequence_nr;
}

NodeTask NodeTask::run(GraphTask& g, Node& node, InputBuffer inputs) {
  NodeTask t;
  t.depth = g.reentrant_depth;
  t.sequence_nr = node.sequence_nr();
  t.graph_task = &g;
  t.node = &node;
  t.inputs = std::move(inputs);
  return t;
}

void ReadyQueue::push(NodeTask task) { insert({&task, 1}); }

void ReadyQueue::push_all(std::vector<NodeTask>& tasks) {
  insert(tasks);
  tasks.clear();
}

void ReadyQueue::insert(std::span<NodeTask> tasks) {
  // Only node tasks count: a wake-up may be left behind in a queue no one pops again.
  const auto runs =
      std::count_if(tasks.begin(), tasks.end(), [](const NodeTask& t) { return t.kind == NodeTask::Kind::run; });
  if (runs != 0) metrics_.queue_depth.add(runs);
  {
    std::lock_guard lock(mu_);
    for (NodeTask& t : tasks) {
      heap_.push_back(std::move(t));
      std::push_heap(heap_.begin(), heap_.end(), runs_after);
    }
    size_.store(heap_.size(), std::memory_order_relaxed);
  }
  cv_.notify_one();
}

NodeTask ReadyQueue::pop() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !heap_.empty(); });
  std::pop_heap(heap_.begin(), heap_.end(), runs_after);
  NodeTask task = std::move(heap_.back());
  heap_.pop_back();
  size_.store(heap_.size(), std::memory_order_relaxed);
  lock.unlock();
  if (task.kind == NodeTask::Kind::run) metrics_.queue_depth.add(-1);
  return task;
}

}  // namespace glassbox::autograd
