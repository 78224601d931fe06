#pragma once
// The fuzz targets' one assertion: a broken property prints what broke and
// aborts, which libFuzzer reports as a crash and saves the input for.
#include <cstdio>
#include <cstdlib>
#include <string_view>

inline void fuzz_check(bool ok, std::string_view property, std::string_view detail = {}) {
  if (ok) return;
  std::fprintf(stderr, "property broken: %.*s\n  %.*s\n", static_cast<int>(property.size()), property.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}
