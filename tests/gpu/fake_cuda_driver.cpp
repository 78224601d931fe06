// A stand-in for the CUDA driver (libcuda.so.1) that an installed driver
// which cannot start looks like: the runtime finds it, its version is 13.0,
// and cuInit fails with GLASSBOX_FAKE_CUINIT_STATUS (a CUresult; 3, not
// initialised, when unset). Tests put its folder first on LD_LIBRARY_PATH of
// a child process to see how glassbox reads such a machine.
//
// The runtime looks every driver function up through cuGetProcAddress; only
// the ones it needs before cuInit's answer are here, the rest are "not found".
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kSuccess = 0;
constexpr int kNotFound = 500;     // CUDA_ERROR_NOT_FOUND
constexpr int kSymbolFound = 0;    // CU_GET_PROC_ADDRESS_SUCCESS
constexpr int kSymbolMissing = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND

int driver_get_version(int* version) {
  *version = 13000;
  return kSuccess;
}

int init(unsigned /*flags*/) {
  const char* status = std::getenv("GLASSBOX_FAKE_CUINIT_STATUS");
  return status != nullptr ? std::atoi(status) : 3;
}

int get_proc_address(const char* symbol, void** fn, int version, unsigned long long flags, int* symbol_status);

int get_proc_address_v1(const char* symbol, void** fn, int version, unsigned long long flags) {
  return get_proc_address(symbol, fn, version, flags, nullptr);
}

int get_proc_address(const char* symbol, void** fn, int version, unsigned long long /*flags*/, int* symbol_status) {
  *fn = nullptr;
  if (std::strcmp(symbol, "cuInit") == 0) *fn = reinterpret_cast<void*>(&init);
  if (std::strcmp(symbol, "cuDriverGetVersion") == 0) *fn = reinterpret_cast<void*>(&driver_get_version);
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    *fn = version >= 12000 ? reinterpret_cast<void*>(&get_proc_address) : reinterpret_cast<void*>(&get_proc_address_v1);
  }
  if (symbol_status != nullptr) *symbol_status = *fn != nullptr ? kSymbolFound : kSymbolMissing;
  return *fn != nullptr ? kSuccess : kNotFound;
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) int cuInit(unsigned flags) { return init(flags); }
__attribute__((visibility("default"))) int cuDriverGetVersion(int* version) { return driver_get_version(version); }
__attribute__((visibility("default"))) int cuGetProcAddress(const char* symbol, void** fn, int version,
                                                            unsigned long long flags) {
  return get_proc_address_v1(symbol, fn, version, flags);
}
__attribute__((visibility("default"))) int cuGetProcAddress_v2(const char* symbol, void** fn, int version,
                                                               unsigned long long flags, int* symbol_status) {
  return get_proc_address(symbol, fn, version, flags, symbol_status);
}
}
