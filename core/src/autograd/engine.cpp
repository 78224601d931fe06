#include "glassbox/autograd/engine.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "glassbox/autograd/backward_error.hpp"
#include "glassbox/autograd/device_kernels.hpp"
#include "glassbox/autograd/grad_mode.hpp"
#include "glassbox/autograd/ready_queue.hpp"
#include "glassbox/error.hpp"
#include "glassbox/nvtx/range.hpp"
#include "glassbox/trace/context.hpp"
#include "glassbox/trace/span.hpp"
#include "node_seconds.hpp"
#include "reentrant_pool.hpp"

namespace glassbox::autograd {

namespace {

// What the calling thread is doing inside an engine. Outside: all empty.
struct ThreadState {
  std::shared_ptr<ReadyQueue> queue;  // the queue this thread serves
  int stack_depth = 0;                // run loops nested on this thread's stack
  GraphTask* graph_task = nullptr;    // task of the node running now
  Engine* engine = nullptr;
};
thread_local ThreadState tl;

// Tasks this thread made ready for the queue it serves, kept off that queue
// while it is empty: a chain's or a fan-in's next node then costs no lock,
// no wake-up and no metric update. The highest priority runs first, as it
// would from the queue; they all join the queue as soon as it holds anything
// (another thread's push), and whenever this thread blocks or stops serving.
class LocalTasks {
 public:
  void push(NodeTask t) {
    if (!best_) {
      if (heap_.empty() || runs_after(heap_.front(), t)) {
        best_.emplace(std::move(t));
        return;
      }
    } else if (runs_after(*best_, t)) {
      heap_.push_back(std::move(*best_));
      std::push_heap(heap_.begin(), heap_.end(), runs_after);
      *best_ = std::move(t);
      return;
    }
    heap_.push_back(std::move(t));
    std::push_heap(heap_.begin(), heap_.end(), runs_after);
  }
  /// The next task for this thread: the best local one while `q` is empty,
  /// else whatever `q` gives once the local ones have joined it.
  NodeTask next(ReadyQueue& q) {
    if (!q.looks_empty() || (!best_ && heap_.empty())) {
      flush_into(q);
      return q.pop();
    }
    if (best_) {
      NodeTask t = std::move(*best_);
      best_.reset();
      return t;
    }
    std::pop_heap(heap_.begin(), heap_.end(), runs_after);
    NodeTask t = std::move(heap_.back());
    heap_.pop_back();
    return t;
  }
  /// Moves every task into `q`, for a thread about to block or stop serving it.
  void flush_into(ReadyQueue& q) {
    if (best_) {
      q.push(std::move(*best_));
      best_.reset();
    }
    if (!heap_.empty()) q.push_all(heap_);
  }

 private:
  // The best task apart from the heap, when it runs before all of it: a
  // chain's one task, and a fan-in's newest branch, never touch the heap
  // (a heap's moves cost a chain node ~10 %).
  std::optional<NodeTask> best_;
  std::vector<NodeTask> heap_;
};
// A thread_local in position-independent code costs a call to find: callers
// look it up once per loop.
thread_local LocalTasks tl_local;

// Whether the node about to run on this thread is timed: every node under a
// sampled span, and, of the rest, one after a random gap averaging `interval`
// (uniform in [0, 2 * interval - 2] untimed nodes; random so that no graph
// whose node kinds repeat with some period is timed at one kind only). An
// untimed node pays a thread-local countdown instead of two clock reads.
thread_local std::uint32_t tl_untimed_left = 0;
thread_local std::uint32_t tl_timing_rng = 0x9e3779b9u;

bool time_this_node(bool sampled, std::uint32_t interval) noexcept {
  if (sampled || interval <= 1) return true;  // the countdown is the thread's, across engines
  if (tl_untimed_left > 0) {
    --tl_untimed_left;
    return false;
  }
  std::uint32_t x = tl_timing_rng;  // xorshift32
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  tl_timing_rng = x;
  tl_untimed_left = x % (2 * interval - 1);
  return true;
}

// Makes the calling thread a server of `queue` for one (possibly nested) run loop.
class ServingScope {
 public:
  ServingScope(std::shared_ptr<ReadyQueue> queue, Engine& engine) noexcept : saved_(tl) {
    tl.queue = std::move(queue);
    tl.engine = &engine;
    ++tl.stack_depth;
  }
  ~ServingScope() { tl = std::move(saved_); }
  ServingScope(const ServingScope&) = delete;
  ServingScope& operator=(const ServingScope&) = delete;

 private:
  ThreadState saved_;
};

// Makes `g` the calling thread's current graph task: where queue_callback
// adds, and the parent of a nested execute.
class CurrentTaskScope {
 public:
  explicit CurrentTaskScope(GraphTask& g) noexcept : saved_(tl.graph_task) { tl.graph_task = &g; }
  ~CurrentTaskScope() { tl.graph_task = saved_; }
  CurrentTaskScope(const CurrentTaskScope&) = delete;
  CurrentTaskScope& operator=(const CurrentTaskScope&) = delete;

 private:
  GraphTask* saved_;
};

// The graph task of one execute: one of the calling thread's spares when it
// has one, given back when the execute returns (by then no node task points
// at it, even when the execute throws: Impl::run). A nested backward per
// checkpoint node would otherwise build and free a task and its tables each
// time.
class SpareGraphTask {
 public:
  SpareGraphTask(bool keep, bool accumulate, int depth, std::shared_ptr<ReadyQueue> queue, trace::SpanContext parent) {
    Spares& spares = tl_spares;
    task_ = spares.count == 0 ? std::make_shared<GraphTask>() : std::move(spares.tasks[--spares.count]);
    task_->reuse(keep, accumulate, depth, std::move(queue), parent);
  }
  ~SpareGraphTask() {
    Spares& spares = tl_spares;
    if (spares.count == spares.tasks.size()) return;
    task_->clear();
    spares.tasks[spares.count++] = std::move(task_);
  }
  SpareGraphTask(const SpareGraphTask&) = delete;
  SpareGraphTask& operator=(const SpareGraphTask&) = delete;

  const std::shared_ptr<GraphTask>& ptr() const noexcept { return task_; }
  GraphTask* operator->() const noexcept { return task_.get(); }
  GraphTask& operator*() const noexcept { return *task_; }

 private:
  // One per nesting level in use at once: a checkpoint chain needs two.
  struct Spares {
    std::array<std::shared_ptr<GraphTask>, 4> tasks;
    std::size_t count = 0;
  };
  static thread_local Spares tl_spares;
  std::shared_ptr<GraphTask> task_;
};
thread_local SpareGraphTask::Spares SpareGraphTask::tl_spares;

std::string describe_slot(const Edge& e) {
  return "input " + std::to_string(e.input_nr) + " of '" + e.function->name() + "'";
}

// Every gradient must match the slot it feeds: a wrong one would be summed
// into other gradients and fail far from its cause.
void check_gradients(const char* producer, std::span<const Edge> edges, const TensorList& grads) {
  if (grads.size() != edges.size()) {
    throw Error(std::string(producer) + " produced " + std::to_string(grads.size()) + " gradients for " +
                std::to_string(edges.size()) + " edges");
  }
  for (std::size_t i = 0; i < edges.size(); ++i) {
    if (!edges[i].valid() || !grads[i].defined()) continue;
    const InputMetadata& want = edges[i].function->input_metadata(edges[i].input_nr);
    if (grads[i].shape() != want.shape) {
      throw Error(std::string(producer) + " produced a gradient of shape " + grads[i].shape().str() + " for " +
                  describe_slot(edges[i]) + ", which expects " + want.shape.str());
    }
    if (grads[i].device() != want.device) {
      throw Error(std::string(producer) + " produced a gradient on device " + device_name(grads[i].device()) + " for " +
                  describe_slot(edges[i]) + ", which expects device " + device_name(want.device));
    }
  }
}

// Whether a gradient arriving at `fn` is routed to it.
bool should_run(const GraphTask& g, const Node* fn) {
  if (g.accumulate) return true;
  const ExecInfo* info = g.exec_info.find(fn);
  return info != nullptr && (info->needed || !info->captures.empty());
}

// Counts, for every node reachable from the roots, the edges that lead into
// it; returns the devices seen as a bit set (bit 0: cpu, bit d+1: device d).
std::uint64_t compute_dependencies(GraphTask& g, const std::vector<Edge>& roots) {
  std::uint64_t devices = 0;
  // Reused: no user code runs during the search, so it never nests on a thread.
  thread_local std::vector<const Node*> stack;
  stack.clear();
  // The last graph this thread ran at this reentrant depth sizes the table:
  // a training loop runs the same graph again, and growing a table of tens
  // of thousands of nodes step by step rehashes it a dozen times.
  thread_local std::array<std::size_t, 4> last_size{};
  std::size_t& last = last_size[static_cast<std::size_t>(std::min(g.reentrant_depth, 3))];
  g.dependencies.reserve(last);
  auto count = [&](const Edge& e) {
    if (!e.valid()) return;
    auto [count_of, first] = g.dependencies.try_emplace(e.function.get());
    ++*count_of;
    if (first) stack.push_back(e.function.get());
  };
  for (const Edge& e : roots) count(e);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    devices |= std::uint64_t{1} << (n->device() + 1);
    for (const Edge& e : n->next_edges()) count(e);
  }
  last = g.dependencies.size();
  return devices;
}

void add_captures(GraphTask& g, const std::vector<Edge>& outputs) {
  g.outputs = outputs;
  g.captured = InputBuffer(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].valid()) {
      g.exec_info.try_emplace(outputs[i].function.get()).first->captures.emplace_back(outputs[i].input_nr, i);
    }
  }
}

// Marks the nodes on a path from a root to a captured edge (post-order DFS,
// iterative so long chains do not overflow the stack).
void mark_needed(GraphTask& g, const std::vector<Edge>& roots) {
  struct Frame {
    const Node* node;
    std::size_t next;
  };
  thread_local std::vector<Frame> stack;  // reused, as in compute_dependencies
  stack.clear();
  auto visit = [&](const Edge& e) {
    if (!e.valid()) return;
    ExecInfo& info = *g.exec_info.try_emplace(e.function.get()).first;
    if (!std::exchange(info.visited, true)) stack.push_back({e.function.get(), 0});
  };
  for (const Edge& e : roots) visit(e);
  while (!stack.empty()) {
    const Node* n = stack.back().node;
    const EdgeList& edges = n->next_edges();
    if (stack.back().next < edges.size()) {
      visit(edges[stack.back().next++]);
      continue;
    }
    stack.pop_back();
    auto leads_on = [&](const Edge& e) { return e.valid() && should_run(g, e.function.get()); };
    if (std::any_of(edges.begin(), edges.end(), leads_on)) {
      g.exec_info.try_emplace(n).first->needed = true;
    }
  }
}

std::string device_list(std::uint64_t devices) {
  std::string s;
  for (int d = kCpu; d < kMaxDevices; ++d) {
    if (devices & (std::uint64_t{1} << (d + 1))) s += (s.empty() ? "" : ",") + device_name(d);
  }
  return s;
}

void check_roots(const std::vector<Edge>& roots, const TensorList& grads) {
  if (grads.size() != roots.size()) {
    throw Error("backward got " + std::to_string(grads.size()) + " gradients for " + std::to_string(roots.size()) +
                " roots");
  }
  for (std::size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].valid()) {
      throw Error("root " + std::to_string(i) + " does not require grad and has no grad_fn");
    }
  }
  check_gradients("the root gradient list", roots, grads);
}

}  // namespace

struct Engine::Impl {
  Impl(Engine& owner, const EngineOptions& options)
      : self(owner),
        registry(options.registry ? *options.registry : metrics::Registry::global()),
        metrics(EngineMetrics::resolve(registry)),
        max_stack_depth(options.max_stack_depth),
        node_timing_interval(options.node_timing_interval) {}

  ~Impl() {
    for (const auto& q : device_queues_owned) q->push(NodeTask::shutdown());
    for (std::thread& t : workers) t.join();
  }

  ReadyQueue& device_queue(int device) {
    if (ReadyQueue* q = device_queues[device].load(std::memory_order_acquire)) return *q;
    std::lock_guard lock(workers_mu);
    if (ReadyQueue* q = device_queues[device].load(std::memory_order_relaxed)) return *q;
    auto q = std::make_shared<ReadyQueue>(DeviceMetrics::resolve(registry, device));
    device_queues_owned.push_back(q);
    workers.emplace_back([this, q, device] {
      if (DeviceKernels* kernels = installed_device_kernels()) kernels->bind_thread(device);
      ServingScope serving(q, self);
      run_until(nullptr, *q);
    });
    device_queues[device].store(q.get(), std::memory_order_release);
    return *q;
  }

  ReadyQueue& queue_for(const GraphTask& g, int device) { return device == kCpu ? *g.cpu_queue : device_queue(device); }

  // Adds each gradient to the buffer of the node its edge leads to and queues
  // the nodes that have now received everything.
  void route(GraphTask& g, const char* from, std::span<const Edge> edges, TensorList&& grads) {
    std::unique_lock lock(g.mu, std::defer_lock);
    if (!g.serial) lock.lock();
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid() || !should_run(g, e.function.get())) continue;
      const Node* fn = e.function.get();
      int* dep = g.dependencies.find(fn);
      if (dep == nullptr) {
        throw Error(std::string("no dependency count for '") + fn->name() + "', reached from " + from +
                    ": the graph changed while backward ran over it");
      }
      if (--*dep > 0) {
        auto [waiting, first] = g.not_ready.try_emplace(fn);
        if (first) *waiting = InputBuffer(fn->num_inputs());
        waiting->add(e.input_nr, std::move(grads[i]));
        continue;
      }
      // Moved out, not erased (a node becomes ready once per graph task), so
      // an emptied buffer is as good as none.
      InputBuffer* waiting = g.not_ready.find(fn);
      const bool partial = waiting && waiting->slots() != 0;
      // A lone gradient for a one-input node: the list it came in becomes the
      // buffer (the last use of grads: its only edge).
      const bool hand_list = !partial && grads.size() == 1 && fn->num_inputs() == 1;
      InputBuffer buffer = partial     ? std::move(*waiting)
                           : hand_list ? InputBuffer::holding(std::move(grads))
                                       : InputBuffer(fn->num_inputs());
      if (!hand_list) buffer.add(e.input_nr, std::move(grads[i]));
      ReadyQueue& q = queue_for(g, fn->device());
      g.count_queued();  // before the push: another thread may run and finish the task at once
      try {
        if (&q == tl.queue.get()) {
          tl_local.push(NodeTask::run(g, *e.function, std::move(buffer)));
        } else {
          q.push(NodeTask::run(g, *e.function, std::move(buffer)));
        }
      } catch (...) {  // out of memory: not queued, so not counted (the execute waits for the count)
        g.count_finished();
        throw;
      }
    }
  }

  // Captures what the execute asked for; false when the node itself must not run.
  static bool capture(GraphTask& g, const Node& node, const TensorList& grads) {
    const ExecInfo* info = g.exec_info.size() == 0 ? nullptr : g.exec_info.find(&node);
    if (info == nullptr) return true;  // only an accumulating task routes to nodes without one
    if (!info->captures.empty()) {
      std::lock_guard lock(g.mu);
      // Added, not set: a reentrant task may have handed gradients for the same edge up already.
      for (auto [slot, index] : info->captures) g.captured.add(static_cast<std::uint32_t>(index), Tensor(grads[slot]));
    }
    return g.accumulate ? info->captures.empty() : info->needed;
  }

  void evaluate(GraphTask& g, Node& node, TensorList grads) {
    for (const Node::PreHook& hook : node.pre_hooks()) hook(grads);
    if (!capture(g, node, grads)) return;
    TensorList kept_for_hooks;
    if (!node.post_hooks().empty()) kept_for_hooks = grads;
    bool any = std::any_of(grads.begin(), grads.end(), [](const Tensor& t) { return t.defined(); });
    TensorList results = any ? node.apply(std::move(grads)) : TensorList(node.next_edges().size());
    check_gradients(node.name(), node.next_edges(), results);
    if (!g.keep_graph) node.release_variables();
    if (!node.post_hooks().empty()) {
      for (const Node::PostHook& hook : node.post_hooks()) hook(results, kept_for_hooks);
      check_gradients(node.name(), node.next_edges(), results);  // a hook may have changed them
    }
    route(g, node.name(), node.next_edges(), std::move(results));
  }

  void process(NodeTask& t, const ReadyQueue& q) {
    GraphTask& g = *t.graph_task;
    if (!g.has_error.load(std::memory_order_acquire)) {
      Node& node = *t.node;
      nvtx::ScopedRange range(node.name(), nvtx::Category::autograd);
      std::optional<trace::ContextScope> parent;
      std::optional<trace::Span> span;
      if (g.trace_parent.sampled) {
        parent.emplace(g.trace_parent);
        span.emplace(node.name());
        span->set_attribute("glassbox.device", node.device());
      }
      CurrentTaskScope current(g);
      NoGradGuard no_grad;  // backward formulas record nothing (no double backward yet)
      const bool timed = time_this_node(g.trace_parent.sampled, node_timing_interval);
      auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      try {
        evaluate(g, node, std::move(t.inputs).take());
      } catch (...) {
        g.record_error(node.name(), std::current_exception());
        if (span) span->set_status(trace::StatusCode::error, "backward failed");
      }
      if (timed) {  // while the node's span is current: it becomes the bucket's exemplar
        std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        q.metrics().node_seconds->of(node.name()).observe(took.count());
      }
      q.metrics().nodes_executed.inc();
      if (span) g.nodes_run.fetch_add(1, std::memory_order_relaxed);  // only the sampled span reports it
    }
    finish_one(g, q);
  }

  // Counts one of `g`'s node tasks finished. The owner may reuse or free `g`
  // the moment the count reaches 0: nothing here touches it after.
  static void finish_one(GraphTask& g, const ReadyQueue& serving) {
    if (g.cpu_queue.get() == &serving) {  // the owner serves this queue: it sees done() itself
      g.count_finished();
      return;
    }
    // The owner waits on its own queue: wake it. A copy, since the owner may
    // return (and free its queue) the moment the count reaches 0.
    std::shared_ptr<ReadyQueue> owner = g.cpu_queue;
    if (g.count_finished() == 0) owner->push(NodeTask::wake());
  }

  void run_until(const GraphTask* g, ReadyQueue& q) {
    LocalTasks& local = tl_local;
    while (g == nullptr || !g->done()) {
      NodeTask t = local.next(q);
      if (t.kind == NodeTask::Kind::shutdown) return;
      if (t.kind == NodeTask::Kind::run) process(t, q);
    }
    local.flush_into(q);  // another task's nodes, made ready by ones this loop ran
  }

  // Serves the owner's queue until `g` is done: on this thread, or on a pool
  // thread (with a fresh stack) once this one is too deeply nested.
  void run_owner(const std::shared_ptr<GraphTask>& g) {
    if (tl.stack_depth < max_stack_depth) return serve(*g);
    tl_local.flush_into(*g->cpu_queue);  // the pool thread serves the queue from here
    std::promise<void> finished;
    try {
      pool.submit([this, &g, &finished] {
        serve(*g);
        finished.set_value();
      });
    } catch (...) {  // no thread to go on with: the queued tasks point at `g`, so they drain here, skipped
      g->record_error("the reentrant pool", std::current_exception());
      return serve(*g);
    }
    finished.get_future().wait();
  }

  // Serves the owner's queue on the calling thread until `g` is done.
  void serve(const GraphTask& g) {
    ServingScope serving(g.cpu_queue, self);
    run_until(&g, *g.cpu_queue);
  }

  void run_final_callbacks(GraphTask& g) {
    CurrentTaskScope current(g);  // callbacks may queue more callbacks
    for (;;) {
      std::vector<std::function<void()>> batch;
      {
        std::lock_guard lock(g.mu);
        if (g.final_callbacks.empty()) return;
        batch.swap(g.final_callbacks);
      }
      for (auto& callback : batch) callback();
    }
  }

  // One execute: backward() when `accumulate`, grad() otherwise.
  TensorList run(const std::vector<Edge>& roots, TensorList grads, bool keep_graph, const std::vector<Edge>& outputs,
                 bool accumulate);

  Engine& self;
  metrics::Registry& registry;
  EngineMetrics metrics;
  const int max_stack_depth;
  std::atomic<int> depth_max_seen{0};  ///< deepest reentrant_depth this engine has sent to the gauge
  const std::uint32_t node_timing_interval;
  std::array<std::atomic<ReadyQueue*>, kMaxDevices> device_queues{};
  std::mutex workers_mu;
  std::vector<std::shared_ptr<ReadyQueue>> device_queues_owned;
  std::vector<std::thread> workers;
  ReentrantPool pool;
};

Engine::Engine(EngineOptions options) : impl_(std::make_unique<Impl>(*this, options)) {}
Engine::~Engine() = default;

Engine& Engine::get_default() {
  static Engine engine;
  return engine;
}

Engine& Engine::current() { return tl.engine ? *tl.engine : get_default(); }

std::size_t Engine::device_threads() const {
  std::lock_guard lock(impl_->workers_mu);
  return impl_->workers.size();
}

void Engine::queue_callback(std::function<void()> callback) {
  if (tl.graph_task == nullptr) throw Error("queue_callback outside a backward pass: call it from a node or hook");
  std::lock_guard lock(tl.graph_task->mu);
  tl.graph_task->final_callbacks.push_back(std::move(callback));
}

TensorList Engine::Impl::run(const std::vector<Edge>& roots, TensorList grads, bool keep_graph,
                             const std::vector<Edge>& outputs, bool accumulate) {
  auto start = std::chrono::steady_clock::now();
  check_roots(roots, grads);
  // Nothing to capture: a selective run with no output edges would run nothing.
  if (!accumulate && std::none_of(outputs.begin(), outputs.end(), [](const Edge& e) { return e.valid(); })) {
    return TensorList(outputs.size());
  }
  int depth = tl.graph_task ? tl.graph_task->reentrant_depth + 1 : 0;
  auto queue = tl.queue ? tl.queue : std::make_shared<ReadyQueue>(metrics.cpu);

  trace::Span span("glassbox.autograd.backward");
  SpareGraphTask g(keep_graph, accumulate, depth, std::move(queue), trace::current_context());
  std::uint64_t devices = compute_dependencies(*g, roots);
  g->serial = devices == std::uint64_t{1} << (kCpu + 1);
  add_captures(*g, outputs);
  if (!accumulate) mark_needed(*g, roots);
  // The gauge's set_max reads every thread's cells: only a new deepest for this engine goes there.
  if (int seen = depth_max_seen.load(std::memory_order_relaxed); depth > seen) {
    while (depth > seen && !depth_max_seen.compare_exchange_weak(seen, depth, std::memory_order_relaxed)) {}
    metrics.reentrant_depth_max.set_max(depth);
  }

  // Tasks queued for roots point at `g`: should routing fail part-way (a
  // device whose worker cannot start), they still drain, skipped, before the
  // error leaves with `g`.
  try {
    route(*g, "the roots", roots, std::move(grads));
  } catch (...) {
    g->record_error("the roots", std::current_exception());
  }
  run_owner(g.ptr());

  std::exception_ptr error;
  {
    std::lock_guard lock(g->mu);
    error = g->error;
  }
  if (!error) {
    try {
      run_final_callbacks(*g);
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (span.recording()) {
    span.set_attribute("glassbox.autograd.nodes_run", g->nodes_run.load(std::memory_order_relaxed))
        .set_attribute("glassbox.autograd.reentrant_depth", depth)
        .set_attribute("glassbox.autograd.devices", device_list(devices));
    if (error) span.set_status(trace::StatusCode::error, exception_message(error));
  }
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  metrics.backward_seconds.observe(took.count());
  if (error) {
    metrics.errors.inc();
    std::rethrow_exception(error);
  }
  std::lock_guard lock(g->mu);
  return std::move(g->captured).take();
}

TensorList Engine::execute(const std::vector<Edge>& roots, TensorList grads, bool keep_graph,
                           const std::vector<Edge>& outputs) {
  return impl_->run(roots, std::move(grads), keep_graph, outputs, outputs.empty());
}

TensorList Engine::execute_reentrant(const std::vector<Edge>& roots, TensorList grads,
                                     const std::vector<Edge>& outputs) {
  GraphTask* parent = tl.graph_task;
  if (parent == nullptr) throw Error("execute_reentrant outside a backward pass: call it from a node");
  if (parent->accumulate) return impl_->run(roots, std::move(grads), false, outputs, true);
  // The parent captures: this graph may reach its captured edges too (a
  // closed-over weight grad() asked for), so capture them here as well and
  // hand what arrives there up to the parent's results.
  std::vector<Edge> wanted = outputs;
  wanted.insert(wanted.end(), parent->outputs.begin(), parent->outputs.end());
  TensorList got = impl_->run(roots, std::move(grads), false, wanted, false);
  std::lock_guard lock(parent->mu);
  for (std::size_t i = outputs.size(); i < got.size(); ++i) {
    parent->captured.add(static_cast<std::uint32_t>(i - outputs.size()), std::move(got[i]));
  }
  got.resize(outputs.size());
  return got;
}

}  // namespace glassbox::autograd
