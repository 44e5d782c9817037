#include "core/result.hpp"

namespace moetune::core {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kParse: return "parse";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kMismatch: return "mismatch";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kVersion: return "version";
    case ErrorCode::kInternal: return "internal";
  }
  return "internal";
}

std::string Error::to_string() const {
  if (where.empty()) {
    return message;
  }
  return where + ": " + message;
}

}  // namespace moetune::core
