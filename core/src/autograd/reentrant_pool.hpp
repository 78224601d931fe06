#pragma once
// Threads that continue nested backward loops once a thread's stack holds
// Engine's max_stack_depth of them. Each job blocks until its nested graph
// task is done, so a job never waits for a free thread: submit() starts one
// when none is idle. Threads are reused and joined by the destructor.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace glassbox::autograd {

class ReentrantPool {
 public:
  ReentrantPool() = default;
  ~ReentrantPool();
  ReentrantPool(const ReentrantPool&) = delete;
  ReentrantPool& operator=(const ReentrantPool&) = delete;

  void submit(std::function<void()> job);

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::size_t idle_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace glassbox::autograd
