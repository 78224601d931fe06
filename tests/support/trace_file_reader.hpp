#pragma once
// Reads a glassbox trace file back and checks it the way a viewer would need
// it: well-formed events, consistent nesting on each thread, flows that start
// in the parent's slice and end in the child's. Failures are gtest failures.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace glassbox::testing {

struct Slice {
  std::string name;
  double ts = 0, dur = 0;
  std::uint64_t tid = 0;
  nlohmann::json args;
  bool contains(double t) const { return t >= ts && t <= ts + dur; }
};

/// One point of a counter track ("C" event).
struct CounterPoint {
  double ts = 0;
  std::int64_t value = 0;
};

struct TraceFile {
  nlohmann::json doc;
  std::vector<Slice> slices;
  std::map<std::uint64_t, std::string> thread_names;
  std::string process_name;
  std::size_t flows = 0;  ///< s/f pairs that connect a parent slice to a child slice
  std::map<std::string, std::vector<CounterPoint>> counters;  ///< by track name, in file order

  /// The track whose name starts with `prefix` (there must be one).
  const std::vector<CounterPoint>& counter(const std::string& prefix) const {
    for (const auto& [name, points] : counters) {
      if (name.rfind(prefix, 0) == 0) return points;
    }
    static const std::vector<CounterPoint> none;
    ADD_FAILURE() << "no counter track " << prefix;
    return none;
  }

  const Slice* by_span_id(const std::string& id) const {
    for (const auto& s : slices) {
      if (s.args.value("span_id", "") == id) return &s;
    }
    return nullptr;
  }
};

/// A trace file path of this process and test, in the temporary directory.
inline std::string test_trace_path(const std::string& prefix) {
  return (std::filesystem::temp_directory_path() /
          (prefix + std::to_string(::getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
           ".json"))
      .string();
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Slices on one thread must nest or follow each other, never half-overlap.
inline void check_nesting(const std::vector<Slice>& all) {
  std::map<std::uint64_t, std::vector<const Slice*>> by_tid;
  for (const auto& s : all) by_tid[s.tid].push_back(&s);
  for (auto& [tid, list] : by_tid) {
    std::sort(list.begin(), list.end(),
              [](auto* a, auto* b) { return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur; });
    std::vector<const Slice*> open;
    for (const Slice* s : list) {
      while (!open.empty() && open.back()->ts + open.back()->dur <= s->ts) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(s->ts + s->dur, open.back()->ts + open.back()->dur + 1e-3)
            << "on thread " << tid << ", '" << s->name << "' overlaps '" << open.back()->name << "' without nesting";
      }
      open.push_back(s);
    }
  }
}

// One s/f pair: from inside the parent's slice to inside the child's, on their threads.
inline void check_flow(TraceFile& t, const std::string& id, const std::vector<nlohmann::json>& points) {
  ASSERT_EQ(points.size(), 2u) << "flow " << id;
  const auto& s = points[0]["ph"] == "s" ? points[0] : points[1];
  const auto& f = points[0]["ph"] == "f" ? points[0] : points[1];
  ASSERT_EQ(s["ph"], "s");
  ASSERT_EQ(f["ph"], "f");
  const Slice* child = t.by_span_id(id);
  ASSERT_NE(child, nullptr) << "flow " << id << " ends at no span";
  const Slice* parent = t.by_span_id(child->args.at("parent_span_id").get<std::string>());
  ASSERT_NE(parent, nullptr) << "flow " << id << " starts at no span";
  EXPECT_NE(parent->tid, child->tid);
  EXPECT_EQ(s["tid"].get<std::uint64_t>(), parent->tid);
  EXPECT_EQ(f["tid"].get<std::uint64_t>(), child->tid);
  EXPECT_TRUE(parent->contains(s["ts"].get<double>())) << "flow start outside its parent '" << parent->name << "'";
  EXPECT_TRUE(child->contains(f["ts"].get<double>())) << "flow end outside its child '" << child->name << "'";
  ++t.flows;
}

// Parses `path`, checks every event's shape, nesting and flows.
inline TraceFile read_trace_file(const std::string& path, std::uint64_t pid) {
  TraceFile t;
  t.doc = nlohmann::json::parse(read_all(path));  // throws, failing the test, on invalid JSON
  EXPECT_EQ(t.doc.value("displayTimeUnit", ""), "ns");
  EXPECT_TRUE(t.doc.at("otherData").is_object());
  std::map<std::string, std::vector<nlohmann::json>> flow_points;  // id -> s and f events
  for (const auto& e : t.doc.at("traceEvents")) {
    std::string ph = e.at("ph");
    EXPECT_EQ(e.at("pid").get<std::uint64_t>(), pid);
    EXPECT_TRUE(e.at("tid").is_number_unsigned());
    if (ph == "X") {
      Slice s{e.at("name").get<std::string>(), e.at("ts").get<double>(), e.at("dur").get<double>(),
              e.at("tid").get<std::uint64_t>(), e.at("args")};
      EXPECT_EQ(e.at("cat"), "glassbox");
      EXPECT_GE(s.dur, 0);
      EXPECT_EQ(s.args.at("span_id").get<std::string>().size(), 16u);
      EXPECT_EQ(s.args.at("trace_id").get<std::string>().size(), 32u);
      t.slices.push_back(std::move(s));
    } else if (ph == "M") {
      std::string what = e.at("name");
      EXPECT_TRUE(what == "thread_name" || what == "process_name") << what;
      std::string name = e.at("args").at("name");
      if (what == "thread_name")
        t.thread_names[e.at("tid").get<std::uint64_t>()] = name;
      else
        t.process_name = name;
    } else if (ph == "C") {
      // Perfetto draws one track per name and argument; the tracks' time is
      // the spans' (microseconds), and each track's points come in time order.
      EXPECT_EQ(e.at("cat"), "glassbox");
      EXPECT_EQ(e.at("args").size(), 1u);
      auto& points = t.counters[e.at("name").get<std::string>()];
      CounterPoint p{e.at("ts").get<double>(), e.at("args").at("value").get<std::int64_t>()};
      if (!points.empty()) {
        EXPECT_GE(p.ts, points.back().ts + 1000.0 - 1e-3) << e.at("name") << ": two samples within a millisecond";
      }
      points.push_back(p);
    } else if (ph == "s" || ph == "f") {
      EXPECT_EQ(e.at("cat"), "glassbox.flow");
      EXPECT_TRUE(e.at("ts").is_number());
      if (ph == "f") {
        EXPECT_EQ(e.at("bp"), "e");
      }
      flow_points[e.at("id").get<std::string>()].push_back(e);
    } else {
      ADD_FAILURE() << "unexpected event phase " << ph;
    }
  }
  check_nesting(t.slices);
  for (const auto& [id, points] : flow_points) check_flow(t, id, points);
  return t;
}

}  // namespace glassbox::testing
