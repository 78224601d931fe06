// glassbox inside a library loaded with dlopen, as glassbox_torch's Python
// module is: its thread_locals work there, on the thread that loads it and on
// threads started afterwards. A thread_local given the initial-exec model
// would have to fit the static TLS that glibc keeps for such libraries, and
// with enough of them the load fails.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>

namespace {

using ModuleRun = int (*)();

// The module, in ../lib beside this executable's folder.
std::string module_path() {
  namespace fs = std::filesystem;
  return (fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "lib" / GLASSBOX_DLOPEN_MODULE).string();
}

TEST(Dlopen, ALibraryHoldingGlassboxLoadsAndRunsOnEveryThread) {
  void* module = dlopen(module_path().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(module, nullptr) << dlerror();
  auto run = reinterpret_cast<ModuleRun>(dlsym(module, "glassbox_dlopen_module_run"));
  ASSERT_NE(run, nullptr) << dlerror();
  EXPECT_EQ(run(), 0);
  int on_thread = -1;
  std::thread([&] { on_thread = run(); }).join();
  EXPECT_EQ(on_thread, 0);
}

}  // namespace
