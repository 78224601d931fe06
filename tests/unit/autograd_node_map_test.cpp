// The per-backward table from node address to a count or buffer
// (glassbox/autograd/node_map.hpp): every key found again, and no layout of
// the keys, dense or at the strides that defeat an address-ordered slot,
// makes a lookup read many slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "glassbox/autograd/node_map.hpp"

namespace {

namespace ga = glassbox::autograd;

// The table never reads through its keys, so addresses stand in for nodes.
const ga::Node* at(std::uintptr_t address) { return reinterpret_cast<const ga::Node*>(address); }

constexpr std::uintptr_t kBase = std::uintptr_t{1} << 40;

// Fills a table with `keys`, reserved for them as a backward's count is,
// and checks each maps to its own value.
ga::NodeMap<int> filled(const std::vector<std::uintptr_t>& keys) {
  ga::NodeMap<int> map;
  map.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto [value, fresh] = map.try_emplace(at(keys[i]));
    EXPECT_TRUE(fresh) << "key " << i;
    *value = static_cast<int>(i);
  }
  EXPECT_EQ(map.size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const int* value = map.find(at(keys[i]));
    EXPECT_TRUE(value != nullptr && *value == static_cast<int>(i)) << "key " << i;
  }
  return map;
}

std::vector<std::uintptr_t> strided(std::size_t n, std::uintptr_t stride) {
  std::vector<std::uintptr_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = kBase + i * stride;
  return keys;
}

constexpr std::size_t kKeys = 20000;  // a 10 000-way fan-in's nodes
// Linear probing at half load with well-spread homes: runs of a few dozen at worst.
constexpr std::size_t kShortProbe = 64;

TEST(NodeMap, DenseNodesEachKeepTheirHomeSlot) {
  // One key a line: denser than nodes, which take two lines or more.
  EXPECT_EQ(filled(strided(kKeys, 64)).longest_probe(), 1U);
  // A graph as the heap lays it out: nodes a few lines apart.
  EXPECT_EQ(filled(strided(kKeys, 208)).longest_probe(), 1U);
}

TEST(NodeMap, KeysOneSpanApartDoNotPileUp) {
  // A reserved table of 2^16 slots spans 2^16 lines: keys at that stride, or
  // a multiple of it, share a line number within their spans.
  constexpr std::uintptr_t kSpan = (std::uintptr_t{1} << 16) * 64;
  EXPECT_LE(filled(strided(kKeys, kSpan)).longest_probe(), kShortProbe);
  EXPECT_LE(filled(strided(kKeys, 4 * kSpan)).longest_probe(), kShortProbe);
}

TEST(NodeMap, ScatteredKeysProbeShortly) {
  std::mt19937_64 random(7);
  std::vector<std::uintptr_t> keys(kKeys);
  for (std::uintptr_t& k : keys) k = kBase + (random() % (std::uintptr_t{1} << 34)) / 64 * 64;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  EXPECT_LE(filled(keys).longest_probe(), kShortProbe);
}

TEST(NodeMap, GrowsWithoutLosingKeys) {
  ga::NodeMap<int> map;  // not reserved: grown slot count by slot count
  for (std::size_t i = 0; i < kKeys; ++i) *map.try_emplace(at(kBase + i * 208)).first = static_cast<int>(i);
  for (std::size_t i = 0; i < kKeys; ++i) ASSERT_EQ(*map.find(at(kBase + i * 208)), static_cast<int>(i));
  EXPECT_EQ(map.find(at(kBase + kKeys * 208)), nullptr);
  EXPECT_LE(map.longest_probe(), kShortProbe);
  map.clear();
  EXPECT_EQ(map.size(), 0U);
  EXPECT_EQ(map.find(at(kBase)), nullptr);
}

}  // namespace
