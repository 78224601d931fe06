#pragma once
// Remembers what an expensive query answered for a key, so that later calls
// with the same key skip it: for cuDNN, the algorithm its heuristics choose
// for one convolution's shapes and the workspace that algorithm needs.
// Asking cuDNN's heuristics on every call was the suspect of issue 18 (423 us
// per cuDNN execute on average in an 8-worker trace); a hit is one lock and
// a hash lookup. PyTorch keeps one such cache per convolution direction (its
// BenchmarkCache over hashed ConvolutionParams); this one is bounded too.
//
// Bounded: at most capacity() entries; storing one more evicts the least
// recently used (counted), so a stream of ever new shapes costs queries,
// never unbounded memory. A miss runs the query outside the lock, so a slow
// query blocks no hit; threads missing one key at once each query, and the
// first to finish stores its answer (the query must answer the same for the
// same key, as cuDNN's heuristics do).
//
// Thread-safety: every member may be called from any thread at once.
// Metrics, labelled {cache=<name>}: glassbox_cudnn_algorithm_cache_hits_total,
// _misses_total, _evictions_total and the gauge
// glassbox_cudnn_algorithm_cache_entries (see cudnn_instrumentation.hpp).
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "glassbox/cudnn/cudnn_instrumentation.hpp"
#include "glassbox/metrics/registry.hpp"

namespace glassbox::cudnn {

template <class Key, class Value, class Hash = std::hash<Key>>
class AlgorithmCache {
 public:
  /// `name` labels the metrics; `capacity` must be at least 1 (ConfigError
  /// naming it otherwise). `registry` must outlive the cache.
  AlgorithmCache(const std::string& name, std::size_t capacity,
                 metrics::Registry& registry = metrics::Registry::global())
      : capacity_(detail::checked_cache_capacity(name, capacity)),
        series_(AlgorithmCacheSeries::resolve(registry, name)) {}
  AlgorithmCache(const AlgorithmCache&) = delete;
  AlgorithmCache& operator=(const AlgorithmCache&) = delete;
  ~AlgorithmCache() { series_.entries.add(-static_cast<double>(entries_.size())); }

  /// The value stored for `key`, or else `query()`'s, stored. What `query`
  /// throws propagates and nothing is stored.
  template <class Query>
  Value get(const Key& key, Query&& query) {
    if (auto hit = find(key)) return *hit;
    series_.misses.inc();
    Value value = std::invoke(std::forward<Query>(query));
    return store(key, std::move(value));
  }

  std::size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  using Entries = std::list<std::pair<Key, Value>>;  // most recently used first

  // A copy of the stored value, made most recently used; empty on a miss.
  std::optional<Value> find(const Key& key) {
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    entries_.splice(entries_.begin(), entries_, it->second);
    series_.hits.inc();
    return it->second->second;
  }

  // Stores `value` unless another thread stored one for `key` first; returns the stored one.
  Value store(const Key& key, Value value) {
    std::lock_guard lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) return it->second->second;
    entries_.emplace_front(key, std::move(value));
    try {
      index_.emplace(key, entries_.begin());
    } catch (...) {
      entries_.pop_front();
      throw;
    }
    series_.entries.add(1);
    if (entries_.size() > capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
      series_.entries.add(-1);
      series_.evictions.inc();
    }
    return entries_.front().second;
  }

  const std::size_t capacity_;
  const AlgorithmCacheSeries series_;
  mutable std::mutex mu_;
  Entries entries_;                                                  // guarded by mu_
  std::unordered_map<Key, typename Entries::iterator, Hash> index_;  // guarded by mu_
};

}  // namespace glassbox::cudnn
