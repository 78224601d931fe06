#pragma once
// Every failure glassbox reports derives from glassbox::Error, so a service can
// catch one type. Messages say what failed, with which inputs, and what to do.
#include <stdexcept>
#include <string>

namespace glassbox {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A configuration value (environment variable or option) that is not accepted.
class ConfigError : public Error {
 public:
  using Error::Error;
};

/// A call into the CUDA runtime, cuBLAS, cuBLASLt or cuDNN failed.
class BackendError : public Error {
 public:
  using Error::Error;
};

/// A call that breaks an API's contract, such as naming memory that is no
/// live allocation.
class UsageError : public Error {
 public:
  using Error::Error;
};

/// A memory request that could not be met even after freeing cached memory.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

}  // namespace glassbox
