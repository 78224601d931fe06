// The backward engine: graph shapes, captures, hooks, callbacks, errors,
// reentrancy, threads and devices, spans and metrics.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/autograd/accumulate_grad.hpp"
#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/backward_error.hpp"
#include "glassbox/autograd/checkpoint.hpp"
#include "glassbox/autograd/engine.hpp"
#include "glassbox/autograd/grad_mode.hpp"
#include "glassbox/autograd/ops.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/trace/in_memory_span_processor.hpp"
#include "glassbox/trace/span_processor.hpp"

namespace ga = glassbox::autograd;
namespace gm = glassbox::metrics;
namespace gt = glassbox::trace;
using ga::Shape;
using ga::Tensor;
using ga::TensorList;

namespace {

Tensor leaf(std::vector<float> values, Shape shape) {
  Tensor t = Tensor::from(shape, std::move(values));
  t.set_requires_grad(true);
  return t;
}

Tensor leaf1(float v) { return leaf({v}, Shape{1}); }

// A node whose backward is a lambda, for shapes of graph the ops cannot make.
class FnNode final : public ga::Node {
 public:
  using Fn = std::function<TensorList(TensorList&&)>;
  FnNode(const char* name, int device, std::vector<ga::Edge> edges, Fn fn)
      : Node(device, std::move(edges)), name_(name), fn_(std::move(fn)) {}
  TensorList apply(TensorList&& grads) override { return fn_(std::move(grads)); }
  const char* name() const noexcept override { return name_; }

 private:
  const char* name_;
  Fn fn_;
};

// A one-input node feeding `next`, declared to receive a gradient shaped like `like`.
std::shared_ptr<FnNode> fn_node(const char* name, int device, std::vector<ga::Edge> next, FnNode::Fn fn,
                                const Tensor& like) {
  auto n = std::make_shared<FnNode>(name, device, std::move(next), std::move(fn));
  n->add_input_metadata(like);
  return n;
}

double series_value(gm::Registry& r, const std::string& name, const gm::LabelPairs& labels = {}) {
  gm::Snapshot s = r.snapshot();
  const gm::SeriesSnapshot* series = gm::find_series(s, name, labels);
  return series ? series->value : -1.0;
}

class EngineTest : public ::testing::Test {
 protected:
  gm::Registry registry;
  ga::Engine engine{ga::EngineOptions{&registry}};

  void run_backward(const Tensor& root, bool keep_graph = false) {
    ga::backward({root}, {}, ga::BackwardOptions{keep_graph, &engine});
  }
};

TEST_F(EngineTest, ChainMultipliesFactors) {
  Tensor x = leaf1(2.0F);
  Tensor y = x;
  for (int i = 0; i < 10; ++i) y = y * 2.0F;
  run_backward(y);
  EXPECT_FLOAT_EQ(x.grad().item(), 1024.0F);
}

TEST_F(EngineTest, VeryLongChainRunsAndIsFreedWithoutDeepRecursion) {
  Tensor x = leaf1(1.0F);
  Tensor y = x;
  for (int i = 0; i < 300000; ++i) y = y * 1.0F;
  run_backward(y);
  EXPECT_FLOAT_EQ(x.grad().item(), 1.0F);
  y = Tensor();  // drops 300000 nodes: recursive destruction would overflow the stack
}

TEST_F(EngineTest, DiamondSumsBothPaths) {
  Tensor x = leaf({1, 2, 3}, Shape{3});
  Tensor y = ga::sum(x * 2.0F + x * 3.0F);
  run_backward(y);
  for (float g : x.grad().data()) EXPECT_FLOAT_EQ(g, 5.0F);
}

TEST_F(EngineTest, SharedSubgraphWithTwoRoots) {
  Tensor x = leaf({0.5F, -1.0F}, Shape{2});
  Tensor s = ga::tanh(x);
  ga::backward({ga::sum(s * 2.0F), ga::sum(s * 3.0F)}, {}, ga::BackwardOptions{false, &engine});
  for (std::size_t i = 0; i < 2; ++i) {
    float t = std::tanh(x.data()[i]);
    EXPECT_NEAR(x.grad().data()[i], 5.0F * (1.0F - t * t), 1e-6);
  }
}

TEST_F(EngineTest, UnusedBranchIsNotRunAndGetsNoGradient) {
  Tensor x = leaf1(1.0F);
  Tensor z = leaf1(1.0F);
  Tensor unused = z * 2.0F;
  bool ran = false;
  unused.grad_fn()->add_pre_hook([&](TensorList&) { ran = true; });
  run_backward(x * 3.0F);
  EXPECT_FLOAT_EQ(x.grad().item(), 3.0F);
  EXPECT_FALSE(z.grad().defined());
  EXPECT_FALSE(ran);
}

TEST_F(EngineTest, GradCapturesIntermediateAndRunsOnlyNeededNodes) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor w = leaf({3, 4}, Shape{2});
  Tensor h = x * 2.0F;
  Tensor side = w * 5.0F;
  int side_runs = 0;
  side.grad_fn()->add_pre_hook([&](TensorList&) { ++side_runs; });
  Tensor y = ga::sum(h * h) + ga::sum(side);
  TensorList g = ga::grad({y}, {h}, {}, ga::GradOptions{false, false, &engine});
  ASSERT_EQ(g.size(), 1U);
  EXPECT_FLOAT_EQ(g[0].data()[0], 4.0F);  // 2h
  EXPECT_FLOAT_EQ(g[0].data()[1], 8.0F);
  EXPECT_EQ(side_runs, 0);
  EXPECT_FALSE(x.grad().defined());  // grad() leaves .grad alone
  EXPECT_FALSE(w.grad().defined());
}

TEST_F(EngineTest, GradOfLeafAndUnusedInput) {
  Tensor x = leaf1(3.0F);
  Tensor unused = leaf1(1.0F);
  Tensor y = x * x;
  TensorList g = ga::grad({y}, {x, unused}, {}, ga::GradOptions{true, true, &engine});
  EXPECT_FLOAT_EQ(g[0].item(), 6.0F);
  EXPECT_FALSE(g[1].defined());
  EXPECT_THROW(ga::grad({y}, {unused}, {}, ga::GradOptions{true, false, &engine}), glassbox::Error);
}

TEST_F(EngineTest, KeepGraphAllowsASecondBackwardAndReleaseForbidsAThird) {
  Tensor x = leaf1(3.0F);
  Tensor y = x * x;
  run_backward(y, true);
  run_backward(y, false);
  EXPECT_FLOAT_EQ(x.grad().item(), 12.0F);
  try {
    run_backward(y);
    FAIL() << "a backward through a released graph must fail";
  } catch (const ga::BackwardError& e) {
    EXPECT_EQ(e.node(), "MulBackward");
    EXPECT_NE(std::string(e.what()).find("second time"), std::string::npos) << e.what();
  }
}

TEST_F(EngineTest, HooksRunInOrderAroundApplyAndMayChangeGradients) {
  Tensor x = leaf1(1.0F);
  Tensor y = x * 3.0F;
  std::vector<std::string> order;
  auto& node = *y.grad_fn();
  node.add_pre_hook([&](TensorList& g) {
    order.push_back("pre1");
    g[0] = g[0] * 2.0F;
  });
  node.add_pre_hook([&](TensorList&) { order.push_back("pre2"); });
  node.add_post_hook([&](TensorList& out, const TensorList& in) {
    order.push_back("post1");
    EXPECT_FLOAT_EQ(in[0].item(), 2.0F);
    EXPECT_FLOAT_EQ(out[0].item(), 6.0F);
  });
  node.add_post_hook([&](TensorList& out, const TensorList&) {
    order.push_back("post2");
    out[0] = out[0] * 10.0F;
  });
  run_backward(y);
  EXPECT_EQ(order, (std::vector<std::string>{"pre1", "pre2", "post1", "post2"}));
  EXPECT_FLOAT_EQ(x.grad().item(), 60.0F);
}

// What a post-hook leaves is checked as apply()'s results are: a list of the
// wrong length or a gradient of the wrong shape is an error naming the node,
// never routed (a short list was read past its end).
TEST_F(EngineTest, APostHookThatBreaksTheResultsFailsTheBackwardClearly) {
  const std::vector<std::pair<const char*, ga::Node::PostHook>> hooks = {
      {"produced 0 gradients for 1 edges", [](TensorList& out, const TensorList&) { out.clear(); }},
      {"of shape [2]", [](TensorList& out, const TensorList&) { out[0] = Tensor::ones(Shape{2}); }},
  };
  for (const auto& [says, hook] : hooks) {
    Tensor x = leaf1(1.0F);
    Tensor y = x * 3.0F;
    y.grad_fn()->add_post_hook(hook);
    try {
      run_backward(y);
      FAIL() << "a post-hook's broken results must fail the backward (" << says << ")";
    } catch (const ga::BackwardError& e) {
      EXPECT_EQ(e.node(), "MulScalarBackward");
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

TEST_F(EngineTest, ReadyNodesRunLatestCreatedFirst) {
  Tensor x = leaf1(1.0F);
  Tensor a = x * 2.0F;
  Tensor b = x * 3.0F;
  std::vector<char> order;
  a.grad_fn()->add_pre_hook([&](TensorList&) { order.push_back('a'); });
  b.grad_fn()->add_pre_hook([&](TensorList&) { order.push_back('b'); });
  run_backward(a + b);
  EXPECT_EQ(order, (std::vector<char>{'b', 'a'}));
}

// Five nodes become ready out of creation order, interleaved with the adds
// that reach them: whatever the order of arrival, the latest created runs
// first among those waiting.
TEST_F(EngineTest, ReadyNodesRunLatestCreatedFirstWhateverTheirArrivalOrder) {
  Tensor x = leaf1(1.0F);
  std::vector<Tensor> n;
  std::vector<char> order;
  for (int i = 0; i < 5; ++i) {
    n.push_back(x * static_cast<float>(i + 2));
    n.back().grad_fn()->add_pre_hook([&order, i](TensorList&) { order.push_back(static_cast<char>('0' + i)); });
  }
  run_backward(n[3] + n[1] + n[4] + n[0] + n[2]);
  EXPECT_EQ(order, (std::vector<char>{'4', '3', '2', '1', '0'}));
  EXPECT_FLOAT_EQ(x.grad().item(), 2.0F + 3.0F + 4.0F + 5.0F + 6.0F);
}

TEST_F(EngineTest, FinalCallbacksRunAfterAllNodesOnTheCaller) {
  Tensor x = leaf1(1.0F);
  Tensor y = x * 3.0F;
  std::vector<std::string> log;
  std::thread::id caller = std::this_thread::get_id();
  y.grad_fn()->add_pre_hook([&](TensorList&) {
    ga::Engine::queue_callback([&] {
      log.push_back(x.grad().defined() ? "first after accumulate" : "first too early");
      EXPECT_EQ(std::this_thread::get_id(), caller);
      ga::Engine::queue_callback([&] { log.push_back("queued by a callback"); });
    });
  });
  run_backward(y);
  EXPECT_EQ(log, (std::vector<std::string>{"first after accumulate", "queued by a callback"}));
  EXPECT_THROW(ga::Engine::queue_callback([] {}), glassbox::Error);
}

// A thread's next execute reuses its last one's graph task: nothing of a
// grad() (what it captured, which nodes it ran), of a backward or of their
// queued callbacks may reach the next execute over the same graph.
TEST_F(EngineTest, AThreadsNextExecuteStartsFromACleanGraphTask) {
  Tensor x = leaf1(3.0F);
  Tensor y = x * x;
  int callbacks = 0;
  y.grad_fn()->add_pre_hook([&](TensorList&) { ga::Engine::queue_callback([&] { ++callbacks; }); });
  TensorList g = ga::grad({y}, {x}, {}, ga::GradOptions{true, false, &engine});
  EXPECT_FLOAT_EQ(g[0].item(), 6.0F);
  EXPECT_FALSE(x.grad().defined());
  run_backward(y, true);
  EXPECT_FLOAT_EQ(x.grad().item(), 6.0F) << "the grad()'s capture of x's edge took the gradient";
  EXPECT_EQ(callbacks, 2);
  g = ga::grad({y}, {x}, {}, ga::GradOptions{true, false, &engine});
  EXPECT_FLOAT_EQ(g[0].item(), 6.0F);
  EXPECT_FLOAT_EQ(x.grad().item(), 6.0F) << "the grad() accumulated into x.grad";
  EXPECT_EQ(callbacks, 3);
}

TEST_F(EngineTest, ErrorNamesTheNodeStopsTheRestAndEngineStaysUsable) {
  Tensor x = leaf1(1.0F);
  Tensor like = Tensor::ones(Shape{1});
  bool later_ran = false;
  auto later = fn_node(
      "Later", ga::kCpu, {ga::gradient_edge(x)},
      [&](TensorList&& g) {
        later_ran = true;
        return TensorList{g[0]};
      },
      like);
  auto bad = fn_node(
      "Exploding", ga::kCpu, {ga::Edge{later, 0}}, [](TensorList&&) -> TensorList { throw std::runtime_error("boom"); },
      like);
  try {
    engine.execute({ga::Edge{bad, 0}}, {like}, false);
    FAIL() << "expected BackwardError";
  } catch (const ga::BackwardError& e) {
    EXPECT_EQ(e.node(), "Exploding");
    EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos);
    EXPECT_THROW(std::rethrow_exception(e.cause()), std::runtime_error);
  }
  EXPECT_FALSE(later_ran);
  EXPECT_EQ(series_value(registry, "glassbox_autograd_errors_total"), 1.0);
  run_backward(x * 2.0F);
  EXPECT_FLOAT_EQ(x.grad().item(), 2.0F);
}

TEST_F(EngineTest, ErrorOnADeviceWorkerReachesTheCaller) {
  Tensor x = leaf1(1.0F);
  Tensor like = Tensor::ones(Shape{1}, 0);
  auto bad = fn_node(
      "ExplodingOnDevice0", 0, {ga::gradient_edge(x)},
      [](TensorList&&) -> TensorList { throw std::runtime_error("device boom"); }, like);
  EXPECT_THROW(engine.execute({ga::Edge{bad, 0}}, {like}, false), ga::BackwardError);
  Tensor y = ga::to(ga::to(x, 0) * 2.0F, ga::kCpu);
  run_backward(y);
  EXPECT_FLOAT_EQ(x.grad().item(), 2.0F);
}

TEST_F(EngineTest, GradientOfWrongShapeOrDeviceIsAClearError) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor like = Tensor::ones(Shape{1});
  auto wrong_shape = fn_node(
      "WrongShape", ga::kCpu, {ga::gradient_edge(x)}, [](TensorList&&) { return TensorList{Tensor::ones(Shape{3})}; },
      like);
  try {
    engine.execute({ga::Edge{wrong_shape, 0}}, {like}, false);
    FAIL();
  } catch (const ga::BackwardError& e) {
    EXPECT_NE(std::string(e.what()).find("shape [3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expects [2]"), std::string::npos) << e.what();
  }
  auto wrong_device = fn_node(
      "WrongDevice", ga::kCpu, {ga::gradient_edge(x)},
      [](TensorList&&) { return TensorList{Tensor::ones(Shape{2}, 1)}; }, like);
  try {
    engine.execute({ga::Edge{wrong_device, 0}}, {like}, false);
    FAIL();
  } catch (const ga::BackwardError& e) {
    EXPECT_NE(std::string(e.what()).find("device 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(engine.execute({ga::gradient_edge(x)}, {Tensor::ones(Shape{5})}, false), glassbox::Error);
  EXPECT_THROW(engine.execute({ga::Edge{}}, {like}, false), glassbox::Error);
}

TEST_F(EngineTest, MissingDependencyIsAClearError) {
  Tensor x = leaf1(1.0F);
  Tensor like = Tensor::ones(Shape{1});
  auto stranger = fn_node(
      "Stranger", ga::kCpu, {}, [](TensorList&&) { return TensorList{}; }, like);
  std::shared_ptr<FnNode> growing;
  growing = fn_node(
      "Growing", ga::kCpu, {ga::gradient_edge(x)},
      [&](TensorList&& g) {
        growing->add_next_edge(ga::Edge{stranger, 0});  // the graph changes under the engine
        return TensorList{g[0], g[0]};
      },
      like);
  try {
    engine.execute({ga::Edge{growing, 0}}, {like}, false);
    FAIL();
  } catch (const ga::BackwardError& e) {
    EXPECT_EQ(e.node(), "Growing");
    EXPECT_NE(std::string(e.what()).find("no dependency count for 'Stranger'"), std::string::npos) << e.what();
  }
}

TEST_F(EngineTest, InPlaceChangeOfASavedTensorIsDetected) {
  Tensor a = Tensor::from(Shape{2}, {1, 2});
  Tensor x = leaf({3, 4}, Shape{2});
  Tensor y = ga::sum(x * a);
  a.mul_(2.0F);
  try {
    run_backward(y);
    FAIL();
  } catch (const ga::BackwardError& e) {
    EXPECT_EQ(e.node(), "MulBackward");
    EXPECT_NE(std::string(e.what()).find("modified in place"), std::string::npos) << e.what();
  }
  Tensor s = ga::sigmoid(x);
  Tensor alias = s.detach();
  Tensor z = ga::sum(s);
  alias.add_(Tensor::ones(Shape{2}));  // an alias shares the version counter
  EXPECT_THROW(run_backward(z), ga::BackwardError);
  EXPECT_THROW(x.mul_(2.0F), glassbox::Error);  // requires grad, grad mode on
}

// f_0(x) = x * c; f_k(x) = checkpoint(f_{k-1}, x). Without grad mode the
// value is computed directly (it equals x * c at every level), so each level
// of backward costs O(1) and nesting reaches `depth` in O(depth) work.
TensorList nested_checkpoint(int level, const TensorList& in, bool shortcut) {
  if (level == 0 || (shortcut && !ga::GradMode::is_enabled())) return {in[0] * 1.5F};
  return ga::checkpoint([level, shortcut](const TensorList& x) { return nested_checkpoint(level - 1, x, shortcut); },
                        in);
}

void expect_nested_checkpoint(ga::Engine& engine, gm::Registry& registry, int depth, bool shortcut) {
  Tensor x = leaf({2.0F, -1.0F}, Shape{2});
  Tensor y = ga::sum(nested_checkpoint(depth, {x}, shortcut)[0]);
  ga::backward({y}, {}, ga::BackwardOptions{false, &engine});
  EXPECT_FLOAT_EQ(x.grad().data()[0], 1.5F);
  EXPECT_FLOAT_EQ(x.grad().data()[1], 1.5F);
  EXPECT_GE(series_value(registry, "glassbox_autograd_reentrant_depth_max"), depth);
}

TEST_F(EngineTest, CheckpointInsideCheckpointDepth100) { expect_nested_checkpoint(engine, registry, 100, false); }
TEST_F(EngineTest, CheckpointInsideCheckpointDepth1000) { expect_nested_checkpoint(engine, registry, 1000, false); }
TEST_F(EngineTest, CheckpointInsideCheckpointDepth1000Shortcut) {
  expect_nested_checkpoint(engine, registry, 1000, true);
}
TEST_F(EngineTest, CheckpointInsideCheckpointDepth10000) { expect_nested_checkpoint(engine, registry, 10000, true); }

TEST_F(EngineTest, ExecuteReentrantOutsideABackwardPassIsAnError) {
  Tensor x = leaf({2.0F}, Shape{1});
  Tensor y = x * 3.0F;
  EXPECT_THROW(engine.execute_reentrant({ga::gradient_edge(y)}, {Tensor::ones(Shape{1})}, {ga::gradient_edge(x)}),
               glassbox::Error);
}

TEST(EngineReentrant, DeepNestingOnADeviceWorkerHandsOffToPoolThreads) {
  gm::Registry registry;
  ga::Engine engine(ga::EngineOptions{&registry, 8});
  Tensor x = Tensor::from(Shape{1}, {2.0F}, 0);
  x.set_requires_grad(true);
  Tensor y = ga::to(nested_checkpoint(200, {x}, true)[0], ga::kCpu);
  ga::backward({y}, {}, ga::BackwardOptions{false, &engine});
  EXPECT_FLOAT_EQ(x.grad().item(), 1.5F);
  EXPECT_GE(series_value(registry, "glassbox_autograd_reentrant_depth_max"), 200);
  EXPECT_GT(series_value(registry, "glassbox_autograd_nodes_executed_total", {{"device", "0"}}), 200);
}

TEST_F(EngineTest, ThirtyTwoThreadsOnSeparateGraphs) {
  constexpr int kThreads = 32;
  std::vector<Tensor> xs;
  for (int t = 0; t < kThreads; ++t) xs.push_back(leaf({1.0F, 2.0F}, Shape{2}));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 20; ++r) {
        Tensor h = ga::tanh(xs[t]) * static_cast<float>(t);
        run_backward(ga::sum(h * h + h));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    for (std::size_t i = 0; i < 2; ++i) {
      double v = xs[t].data()[i];
      double th = std::tanh(v);
      double h = th * t;
      double want = 20.0 * (2.0 * h + 1.0) * t * (1.0 - th * th);
      EXPECT_NEAR(xs[t].grad().data()[i], want, 1e-3 * (1.0 + std::abs(want)));
    }
  }
}

TEST_F(EngineTest, ThirtyTwoThreadsSharingLeavesAccumulateExactly) {
  constexpr int kThreads = 32;
  constexpr int kRounds = 50;
  Tensor x = leaf({1.0F, 2.0F, 3.0F}, Shape{3});
  Tensor shared = x * 2.0F;  // a shared interior node as well as a shared leaf
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int r = 0; r < kRounds; ++r) {
        ga::backward({ga::sum(shared * 1.0F + x)}, {}, ga::BackwardOptions{true, &engine});
      }
    });
  }
  for (auto& th : threads) th.join();
  for (float g : x.grad().data()) EXPECT_EQ(g, 3.0F * kThreads * kRounds);
}

// Branches on the CPU and on two devices all meet in one leaf: both device
// workers route into the graph task while the caller does, so it must take
// its lock (a CPU-only task takes none: under ThreadSanitizer this test
// fails when every task is taken for CPU-only).
TEST_F(EngineTest, DeviceWorkersAndTheCallerRouteIntoOneGraphTaskAtOnce) {
  constexpr int kBranches = 300;
  Tensor x = leaf1(1.0F);
  Tensor acc;
  float want = 0.0F;
  for (int i = 0; i < kBranches; ++i) {
    const int device = i % 3 - 1;  // the CPU, device 0, device 1
    const float factor = static_cast<float>(i % 7 + 1);
    Tensor branch = device == ga::kCpu ? x * factor : ga::to(ga::to(x, device) * factor, ga::kCpu);
    acc = acc.defined() ? acc + branch : branch;
    want += factor;
  }
  run_backward(acc);
  EXPECT_FLOAT_EQ(x.grad().item(), want);
  EXPECT_EQ(engine.device_threads(), 2U);
}

TEST_F(EngineTest, DeviceNodesRunOnOneWorkerPerDeviceAndCpuNodesOnTheCaller) {
  Tensor x = leaf({0.5F, 1.0F}, Shape{2});
  Tensor on0 = ga::tanh(ga::to(x, 0));
  Tensor on1 = ga::to(on0, 1) * 3.0F;
  Tensor y = ga::sum(ga::to(on1, ga::kCpu) * 2.0F);
  std::mutex mu;
  std::map<int, std::set<std::thread::id>> threads_by_device;
  auto watch = [&](const Tensor& t) {
    int dev = t.grad_fn()->device();
    t.grad_fn()->add_pre_hook([&, dev](TensorList&) {
      std::lock_guard lock(mu);
      threads_by_device[dev].insert(std::this_thread::get_id());
    });
  };
  for (const Tensor& t : {on0, on1, y}) watch(t);
  run_backward(y);
  for (std::size_t i = 0; i < 2; ++i) {
    float t = std::tanh(x.data()[i]);
    EXPECT_NEAR(x.grad().data()[i], 6.0F * (1.0F - t * t), 1e-6);
  }
  ASSERT_EQ(threads_by_device.size(), 3U);
  EXPECT_EQ(threads_by_device[ga::kCpu], std::set<std::thread::id>{std::this_thread::get_id()});
  ASSERT_EQ(threads_by_device[0].size(), 1U);
  ASSERT_EQ(threads_by_device[1].size(), 1U);
  EXPECT_NE(*threads_by_device[0].begin(), *threads_by_device[1].begin());
  EXPECT_EQ(threads_by_device[0].count(std::this_thread::get_id()), 0U);
  EXPECT_EQ(engine.device_threads(), 2U);
  EXPECT_EQ(series_value(registry, "glassbox_autograd_nodes_executed_total", {{"device", "1"}}), 2.0);
  EXPECT_EQ(series_value(registry, "glassbox_autograd_ready_queue_depth", {{"device", "0"}}), 0.0);
}

TEST_F(EngineTest, ManyThreadsMixingDevicesAndReentrancy) {
  constexpr int kThreads = 8;
  std::vector<Tensor> xs;
  for (int t = 0; t < kThreads; ++t) xs.push_back(leaf({1.0F}, Shape{1}));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 10; ++r) {
        Tensor on = ga::to(xs[t], t % 2);
        Tensor y = ga::to(nested_checkpoint(5, {on}, false)[0] * 2.0F, ga::kCpu);
        run_backward(y);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const Tensor& x : xs) EXPECT_FLOAT_EQ(x.grad().item(), 30.0F);
}

TEST_F(EngineTest, BackwardHasASpanWithNodeChildrenAcrossThreads) {
  auto processor = std::make_shared<gt::InMemorySpanProcessor>();
  gt::set_sampler(gt::always_on());
  gt::set_span_processor(processor);
  Tensor x = leaf1(1.0F);
  run_backward(ga::to(ga::to(x, 0) * 2.0F, ga::kCpu));
  gt::set_span_processor(nullptr);
  gt::set_sampler(nullptr);
  std::vector<gt::SpanData> spans = processor->take();
  const gt::SpanData* root = nullptr;
  for (const auto& s : spans) {
    if (s.name == "glassbox.autograd.backward") root = &s;
  }
  ASSERT_NE(root, nullptr);
  std::set<std::string> children;
  bool other_thread = false;
  for (const auto& s : spans) {
    if (&s == root) continue;
    EXPECT_EQ(s.parent_span_id, root->context.span_id) << s.name;
    EXPECT_EQ(s.context.trace_id, root->context.trace_id);
    children.insert(s.name);
    other_thread = other_thread || s.thread_id != root->thread_id;
  }
  EXPECT_EQ(children, (std::set<std::string>{"ToBackward", "MulScalarBackward", "AccumulateGrad"}));
  EXPECT_TRUE(other_thread);
  bool saw_nodes = false;
  for (const auto& a : root->attributes) {
    if (a.key == "glassbox.autograd.nodes_run") saw_nodes = std::get<std::int64_t>(a.value) == 4;
  }
  EXPECT_TRUE(saw_nodes);
}

TEST_F(EngineTest, FailedBackwardSpanCarriesTheError) {
  auto processor = std::make_shared<gt::InMemorySpanProcessor>();
  gt::set_sampler(gt::always_on());
  gt::set_span_processor(processor);
  Tensor like = Tensor::ones(Shape{1});
  auto bad = fn_node(
      "Exploding", ga::kCpu, {}, [](TensorList&&) -> TensorList { throw std::runtime_error("boom"); }, like);
  EXPECT_THROW(engine.execute({ga::Edge{bad, 0}}, {like}, false), ga::BackwardError);
  gt::set_span_processor(nullptr);
  gt::set_sampler(nullptr);
  bool found = false;
  for (const auto& s : processor->take()) {
    if (s.name != "glassbox.autograd.backward") continue;
    found = true;
    EXPECT_EQ(s.status, gt::StatusCode::error);
    EXPECT_NE(s.status_message.find("'Exploding' failed: boom"), std::string::npos) << s.status_message;
  }
  EXPECT_TRUE(found);
}

TEST_F(EngineTest, MetricsCountExecutesAndNodes) {
  Tensor x = leaf1(1.0F);
  run_backward(x * 2.0F * 3.0F);
  gm::Snapshot s = registry.snapshot();
  const gm::SeriesSnapshot* h = gm::find_series(s, "glassbox_autograd_backward_seconds");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->histogram.count, 1U);
  EXPECT_EQ(series_value(registry, "glassbox_autograd_nodes_executed_total", {{"device", "cpu"}}), 3.0);
  EXPECT_EQ(series_value(registry, "glassbox_autograd_ready_queue_depth", {{"device", "cpu"}}), 0.0);
}

}  // namespace

namespace {

std::uint64_t node_count(gm::Registry& r, const std::string& node, const std::string& device = "cpu") {
  gm::Snapshot s = r.snapshot();
  const gm::SeriesSnapshot* series =
      gm::find_series(s, "glassbox_autograd_node_seconds", {{"node", node}, {"device", device}});
  return series ? series->histogram.count : 0;
}

}  // namespace

TEST(EngineNodeSeconds, TimesEveryNodeByTypeAndDeviceWhenTheIntervalIsOne) {
  gm::Registry registry;
  ga::Engine engine(ga::EngineOptions{&registry, 100, 1});
  Tensor x = leaf1(1.0F);
  ga::backward({ga::to(ga::to(x, 0) * 2.0F * 3.0F, ga::kCpu)}, {}, ga::BackwardOptions{false, &engine});
  EXPECT_EQ(node_count(registry, "MulScalarBackward", "0"), 2u);
  EXPECT_EQ(node_count(registry, "ToBackward", "cpu"), 1u);
  EXPECT_EQ(node_count(registry, "ToBackward", "0"), 1u);
  EXPECT_EQ(node_count(registry, "AccumulateGrad", "cpu"), 1u);
}

// Untraced, one node in about the interval is timed, spread over the kinds:
// in a chain alternating two kinds, both are timed, and about 1/interval of all.
TEST(EngineNodeSeconds, TimesAboutOneInTheIntervalOfUntracedNodesOfEveryKind) {
  gm::Registry registry;
  ga::Engine engine(ga::EngineOptions{&registry, 100, 16});
  Tensor x = leaf1(1.0F);
  Tensor y = x;
  for (int i = 0; i < 3200; ++i) y = i % 2 == 0 ? y * 1.0F : ga::relu(y);
  ga::backward({y}, {}, ga::BackwardOptions{false, &engine});
  std::uint64_t mul = node_count(registry, "MulScalarBackward");
  std::uint64_t relu = node_count(registry, "ReluBackward");
  EXPECT_GT(mul, 0u);
  EXPECT_GT(relu, 0u);
  EXPECT_GT(mul + relu, 3200u / 16 / 2);
  EXPECT_LT(mul + relu, 3200u / 16 * 2);
}

// A thread remembers the series it found by name (NodeSeconds::of): each
// engine must still count its own nodes, whether two are alive at once or one
// is made where another was.
TEST(EngineNodeSeconds, EachEngineCountsItsOwnNodesOnOneThread) {
  auto run = [](ga::Engine& engine) {
    Tensor x = leaf1(1.0F);
    ga::backward({x * 2.0F * 3.0F}, {}, ga::BackwardOptions{false, &engine});
  };
  gm::Registry a_registry;
  gm::Registry b_registry;
  ga::Engine a(ga::EngineOptions{&a_registry, 100, 1});
  ga::Engine b(ga::EngineOptions{&b_registry, 100, 1});
  run(a);
  run(b);
  run(a);
  EXPECT_EQ(node_count(a_registry, "MulScalarBackward"), 4u);
  EXPECT_EQ(node_count(b_registry, "MulScalarBackward"), 2u);
  for (int round = 0; round < 3; ++round) {
    gm::Registry registry;
    ga::Engine engine(ga::EngineOptions{&registry, 100, 1});
    run(engine);
    EXPECT_EQ(node_count(registry, "MulScalarBackward"), 2u) << "engine " << round;
  }
}

// Threads timing nodes of one engine at once: each finds its series through
// its own memo, and the first to meet a name adds its series under the
// table's lock (a race there is what ThreadSanitizer, scripts/sanitize, looks for).
TEST(EngineNodeSeconds, ThreadsTimingNodesAtOnceCountEveryOne) {
  gm::Registry registry;
  ga::Engine engine(ga::EngineOptions{&registry, 100, 1});
  constexpr int kThreads = 8;
  constexpr int kPasses = 20;
  constexpr int kNodes = 50;
  std::barrier start(kThreads);  // each pass's backward starts on every thread at once
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int pass = 0; pass < kPasses; ++pass) {
        Tensor y = leaf1(1.0F);
        for (int i = 0; i < kNodes; ++i) y = i % 2 == 0 ? y * 1.0F : ga::relu(y);
        start.arrive_and_wait();
        ga::backward({y}, {}, ga::BackwardOptions{false, &engine});
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(node_count(registry, "MulScalarBackward") + node_count(registry, "ReluBackward"),
            std::uint64_t{kThreads} * kPasses * kNodes);
}

TEST(EngineNodeSeconds, FoldsNamesPastTheCapIntoOther) {
  gm::Registry registry;
  ga::Engine engine(ga::EngineOptions{&registry, 100, 1});
  std::vector<std::string> names;  // node names are static in real nodes; these outlive the pass
  names.reserve(70);               // no reallocation: the nodes keep c_str()
  for (int i = 0; i < 70; ++i) names.push_back("Custom" + std::to_string(i) + "Backward");
  Tensor like = Tensor::ones(Shape{1});
  std::vector<ga::Edge> next;
  for (int i = 0; i < 70; ++i) {
    auto n = fn_node(
        names[static_cast<std::size_t>(i)].c_str(), ga::kCpu, next,
        [last = next.empty()](TensorList&& g) { return last ? TensorList{} : std::move(g); }, like);
    next = {ga::Edge{n, 0}};
  }
  engine.execute(next, {like}, false);
  gm::Snapshot s = registry.snapshot();
  std::size_t own = 0;
  for (const auto& f : s) {
    if (f.name != "glassbox_autograd_node_seconds") continue;
    for (const auto& series : f.series) own += series.labels[0].second != "other";
  }
  EXPECT_EQ(own, 64u);
  EXPECT_EQ(node_count(registry, "other"), 6u);
}

TEST(EngineNodeSeconds, BucketsCarryTheSampledNodeSpanAsExemplar) {
  gm::Registry registry;
  ga::Engine engine(ga::EngineOptions{&registry});
  auto processor = std::make_shared<gt::InMemorySpanProcessor>();
  gt::set_sampler(gt::always_on());
  gt::set_span_processor(processor);
  Tensor x = leaf1(1.0F);
  ga::backward({x * 2.0F}, {}, ga::BackwardOptions{false, &engine});
  gt::set_span_processor(nullptr);
  gt::set_sampler(nullptr);
  std::map<std::string, std::string> span_of;  // name -> span id
  for (const auto& s : processor->take()) span_of[s.name] = s.context.span_id.hex();
  gm::Snapshot snap = registry.snapshot();
  auto exemplar_span = [&](const std::string& name, const gm::LabelPairs& labels) -> std::string {
    const gm::SeriesSnapshot* series = gm::find_series(snap, name, labels);
    if (series == nullptr) return "no series";
    for (const auto& e : series->histogram.exemplars)
      if (e) return e->labels[1].second;
    return "no exemplar";
  };
  EXPECT_EQ(exemplar_span("glassbox_autograd_node_seconds", {{"node", "MulScalarBackward"}}),
            span_of["MulScalarBackward"]);
  EXPECT_EQ(exemplar_span("glassbox_autograd_backward_seconds", {}), span_of["glassbox.autograd.backward"]);
}
