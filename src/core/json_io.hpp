// JSON io: the only place the JSON library is seen (STYLE 3). Strict readers for every core type:
// unknown fields are errors with "did you mean", wrong types name the field path and the expected
// type, and malformed text names file:line. JSON keys are exactly the C++ field names (STYLE 8).
// Only core/*.cpp include this header; other areas use the nlohmann-free core/json_text.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/resolver.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "core/source.hpp"
#include "core/table.hpp"

namespace moetune::core {

/// Ordered so that printed objects keep the C++ field order.
using Json = nlohmann::ordered_json;

/// Where a JSON value sits: the file and the field path inside it ("shapes[0] (demo).problem").
struct JsonAt {
  std::string file;
  std::string path;

  /// The member `name` of this value: "a.b", or "a name" after a path ending in ')'.
  JsonAt field(std::string_view name) const;
  /// The element `i` of this array: "a[3]"; for maps keyed by M, "a[16]".
  JsonAt index(int64_t i) const;
  /// "file: path", "file" or "path" (what Error::where holds).
  std::string where() const;
};

/// An error at `at` with the given code and message.
Error json_error(ErrorCode code, JsonAt const& at, std::string message);

/// What a reader does with a key given twice in one object.
enum class DuplicateKeys {
  kError,     ///< our formats (recipes, manifests, lever tables, caches): an error naming both
  kLastWins,  ///< vLLM's files: the later value wins, as Python's json.load has it
};

/// Parses JSON text (json_parse.cpp). Malformed text -> kParse with where = "file:line" and the
/// column in the message; a BOM, a NUL byte or nesting deeper than kMaxJsonDepth -> kParse
/// (json_bytes.hpp); a duplicate key -> kParse naming the object's path and the key, unless
/// `dup` is kLastWins. Never throws; linear in the text.
Result<Json> parse_json(std::string_view text, std::string const& file,
                        DuplicateKeys dup = DuplicateKeys::kError);
/// Called by parse_json_streamed with each member of the streamed object, in file order, as soon
/// as its value is complete; `repeats` says the key was seen before in that object (only with
/// kLastWins: the later value wins, in the earlier one's place). An error stops the parse and is
/// what parse_json_streamed returns.
using JsonMemberFn = std::function<Status(std::string const& key, Json& value, bool repeats)>;
/// As parse_json, but the members of the object at `stream_path` (keys from the root: {} is the
/// root object itself, {"rows"} the root's member "rows") go to `on_member` one at a time and are
/// not kept: the returned tree holds that object empty. Memory is the largest member's tree, not
/// the whole text's. A callback error comes before a syntax error later in the text. When the
/// value at `stream_path` is not an object, it is kept whole and `on_member` is never called.
Result<Json> parse_json_streamed(std::string_view text, std::string const& file, DuplicateKeys dup,
                                 std::vector<std::string> const& stream_path,
                                 JsonMemberFn const& on_member);
/// Prints JSON with `indent` spaces (vLLM's save_configs uses 4) and a trailing newline.
std::string print_json(Json const& j, int indent);

/// A short description of a JSON value's type for messages: "string \"16\"", "number 1.5", ...
/// At most ~40 characters of the value, whatever its size.
std::string describe_json(Json const& j);

// ---- scalars --------------------------------------------------------------------------------
Status from_json(Json const& j, JsonAt const& at, int* out);
Status from_json(Json const& j, JsonAt const& at, int64_t* out);
Status from_json(Json const& j, JsonAt const& at, uint64_t* out);
Status from_json(Json const& j, JsonAt const& at, double* out);
Status from_json(Json const& j, JsonAt const& at, bool* out);
Status from_json(Json const& j, JsonAt const& at, std::string* out);
Status from_json(Json const& j, JsonAt const& at, Activation* out);
Status from_json(Json const& j, JsonAt const& at, DType* out);
Status from_json(Json const& j, JsonAt const& at, Quant* out);
Status from_json(Json const& j, JsonAt const& at, Schedule* out);
Status from_json(Json const& j, JsonAt const& at, RoutingKind* out);
Status from_json(Json const& j, JsonAt const& at, Rule* out);
Status from_json(Json const& j, JsonAt const& at, std::pair<int, int>* out);
Status from_json(Json const& j, JsonAt const& at, std::map<std::string, double>* out);
Status from_json(Json const& j, JsonAt const& at, std::vector<int64_t>* out);

// ---- strict object reading -----------------------------------------------------------------
/// Reads one JSON object field by field. open() checks that `j` is an object and that every key is
/// one of `fields` (else "unknown field 'x'; expected one of ...; did you mean 'y'?").
class ObjectReader {
 public:
  static Result<ObjectReader> open(Json const& j, JsonAt at, std::vector<std::string> fields);

  /// Reads `name` into *out when present (null leaves an optional empty); absent keeps *out.
  template <class T>
  Status optional(char const* name, T* out) const {
    auto it = j_->find(name);
    if (it == j_->end()) return Status::Ok();
    return from_json(*it, at_.field(name), out);
  }
  template <class T>
  Status optional(char const* name, std::optional<T>* out) const {
    auto it = j_->find(name);
    if (it == j_->end() || it->is_null()) {
      *out = std::nullopt;
      return Status::Ok();
    }
    T value{};
    MOETUNE_RETURN_IF_ERROR(from_json(*it, at_.field(name), &value));
    *out = std::move(value);
    return Status::Ok();
  }
  /// As optional(), but a missing key is an error: "missing field 'name'".
  template <class T>
  Status required(char const* name, T* out) const {
    if (!has(name)) return missing(name);
    return optional(name, out);
  }
  bool has(char const* name) const { return j_->contains(name); }
  Error missing(char const* name) const;
  JsonAt const& at() const { return at_; }
  Json const& json() const { return *j_; }

 private:
  ObjectReader(Json const* j, JsonAt at) : j_(j), at_(std::move(at)) {}
  Json const* j_;
  JsonAt at_;
};

// ---- core types ------------------------------------------------------------------------------
Json to_json(MoeProblem const& p);
Json to_json(TileConfig const& t);
Json to_json(PipelineConfig const& p);
Json to_json(LaunchConfig const& l);
Json to_json(KernelConfig const& k);
Json to_json(MoeConfig const& c);
Json to_json(Source const& s);
Json to_json(RoutingProfile const& r);
Json to_json(ResolverPolicy const& p);
Json to_json(TableKey const& k);
Json to_json(Resolution const& r);
Json to_json(DeviceInfo const& d);

Status from_json(Json const& j, JsonAt const& at, MoeProblem* out);
Status from_json(Json const& j, JsonAt const& at, TileConfig* out);
Status from_json(Json const& j, JsonAt const& at, PipelineConfig* out);
Status from_json(Json const& j, JsonAt const& at, LaunchConfig* out);
Status from_json(Json const& j, JsonAt const& at, KernelConfig* out);
Status from_json(Json const& j, JsonAt const& at, MoeConfig* out);
Status from_json(Json const& j, JsonAt const& at, Source* out);
Status from_json(Json const& j, JsonAt const& at, RoutingProfile* out);
Status from_json(Json const& j, JsonAt const& at, ResolverPolicy* out);
Status from_json(Json const& j, JsonAt const& at, TableKey* out);
Status from_json(Json const& j, JsonAt const& at, Resolution* out);
Status from_json(Json const& j, JsonAt const& at, DeviceInfo* out);

/// Parses `text` (from `file`) as one T, strictly. The shared body of the json_text.hpp parsers.
template <class T>
Result<T> parse_json_as(std::string_view text, std::string const& file) {
  auto j = parse_json(text, file);
  if (!j.ok()) return j.error();
  T value{};
  MOETUNE_RETURN_IF_ERROR(from_json(*j, JsonAt{file, ""}, &value));
  return value;
}

}  // namespace moetune::core
