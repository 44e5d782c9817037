// JSON io helpers: parsing with file:line errors, strict scalar readers, ObjectReader.
// Every nlohmann exception is caught here and turned into an Error (STYLE 12).
#include "core/json_io.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/names.hpp"

namespace moetune::core {

JsonAt JsonAt::field(std::string_view name) const {
  if (path.empty()) return JsonAt{file, clip(name)};
  char const sep = path.back() == ')' ? ' ' : '.';
  return JsonAt{file, path + sep + clip(name)};
}

JsonAt JsonAt::index(int64_t i) const { return JsonAt{file, path + "[" + std::to_string(i) + "]"}; }

std::string JsonAt::where() const {
  if (file.empty()) return path;
  if (path.empty()) return file;
  return file + ": " + path;
}

Error json_error(ErrorCode code, JsonAt const& at, std::string message) {
  return make_error(code, at.where(), std::move(message));
}

std::string print_json(Json const& j, int indent) {
  try {
    return j.dump(indent) + "\n";
  } catch (std::exception const&) {
    // dump throws only on invalid UTF-8; replace rather than fail a write.
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
}

namespace {

/// The JSON text of `j`, cut after about `max` characters: containers are walked element by
/// element and stop early, so a huge value costs no more than a small one.
std::string preview(Json const& j, size_t max) {
  auto plain = [](Json const& v) {
    return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (!j.is_structured()) return plain(j);
  std::string out = j.is_array() ? "[" : "{";
  for (auto it = j.begin(); it != j.end() && out.size() <= max; ++it) {
    if (out.size() > 1) out += ",";
    if (j.is_object()) out += plain(Json(it.key())) + ":";
    out += it->is_structured() ? (it->is_array() ? "[...]" : "{...}") : plain(*it);
  }
  return out + (j.is_array() ? "]" : "}");
}

}  // namespace

std::string describe_json(Json const& j) {
  std::string text = preview(j, 40);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "boolean " + text;
    case Json::value_t::string: return "string " + text;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer " + text;
    case Json::value_t::number_float: return "number " + text;
    case Json::value_t::array: return "array " + text;
    case Json::value_t::object: return "object " + text;
    default: return text;
  }
}

namespace {

Error wrong_type(Json const& j, JsonAt const& at, char const* expected) {
  return json_error(ErrorCode::kParse, at,
                    std::string("expected ") + expected + ", got " + describe_json(j));
}

template <class Int>
Status read_integer(Json const& j, JsonAt const& at, Int* out, char const* expected) {
  if (j.is_number_unsigned()) {
    auto const v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<Int>::max())) {
      return json_error(ErrorCode::kParse, at,
                        std::string("value ") + j.dump() + " does not fit " + expected);
    }
    *out = static_cast<Int>(v);
    return Status::Ok();
  }
  if (j.is_number_integer()) {
    auto const v = j.get<int64_t>();
    if (v < static_cast<int64_t>(std::numeric_limits<Int>::min()) ||
        (v > 0 &&
         static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<Int>::max()))) {
      return json_error(ErrorCode::kParse, at,
                        std::string("value ") + j.dump() + " does not fit " + expected);
    }
    *out = static_cast<Int>(v);
    return Status::Ok();
  }
  return wrong_type(j, at, expected);
}

template <class Enum, class ParseFn>
Status read_enum(Json const& j, JsonAt const& at, Enum* out, ParseFn parse) {
  if (!j.is_string()) return wrong_type(j, at, "a string");
  auto r = parse(j.get<std::string>());
  if (!r.ok()) return json_error(r.error().code, at, r.error().message);
  *out = *r;
  return Status::Ok();
}

}  // namespace

Status from_json(Json const& j, JsonAt const& at, int* out) {
  return read_integer(j, at, out, "an integer (32-bit)");
}
Status from_json(Json const& j, JsonAt const& at, int64_t* out) {
  return read_integer(j, at, out, "an integer");
}
Status from_json(Json const& j, JsonAt const& at, uint64_t* out) {
  return read_integer(j, at, out, "a non-negative integer");
}
Status from_json(Json const& j, JsonAt const& at, double* out) {
  if (!j.is_number()) return wrong_type(j, at, "a number");
  *out = j.get<double>();
  return Status::Ok();
}
Status from_json(Json const& j, JsonAt const& at, bool* out) {
  if (!j.is_boolean()) return wrong_type(j, at, "a boolean (true/false)");
  *out = j.get<bool>();
  return Status::Ok();
}
Status from_json(Json const& j, JsonAt const& at, std::string* out) {
  if (!j.is_string()) return wrong_type(j, at, "a string");
  *out = j.get<std::string>();
  return Status::Ok();
}
Status from_json(Json const& j, JsonAt const& at, Activation* out) {
  return read_enum(j, at, out, parse_activation);
}
Status from_json(Json const& j, JsonAt const& at, DType* out) {
  return read_enum(j, at, out, parse_dtype);
}
Status from_json(Json const& j, JsonAt const& at, Quant* out) {
  return read_enum(j, at, out, parse_quant);
}
Status from_json(Json const& j, JsonAt const& at, Schedule* out) {
  return read_enum(j, at, out, parse_schedule);
}

Status from_json(Json const& j, JsonAt const& at, std::pair<int, int>* out) {
  if (!j.is_array() || j.size() != 2) return wrong_type(j, at, "an array of two integers");
  MOETUNE_RETURN_IF_ERROR(from_json(j[0], at.index(0), &out->first));
  return from_json(j[1], at.index(1), &out->second);
}

Status from_json(Json const& j, JsonAt const& at, std::map<std::string, double>* out) {
  if (!j.is_object()) return wrong_type(j, at, "an object of numbers");
  out->clear();
  for (auto it = j.begin(); it != j.end(); ++it) {
    double v = 0;
    MOETUNE_RETURN_IF_ERROR(from_json(it.value(), at.field(it.key()), &v));
    (*out)[it.key()] = v;
  }
  return Status::Ok();
}

Status from_json(Json const& j, JsonAt const& at, std::vector<int64_t>* out) {
  if (!j.is_array()) return wrong_type(j, at, "an array of integers");
  out->clear();
  for (size_t i = 0; i < j.size(); ++i) {
    int64_t v = 0;
    MOETUNE_RETURN_IF_ERROR(from_json(j[i], at.index(static_cast<int64_t>(i)), &v));
    out->push_back(v);
  }
  return Status::Ok();
}

Result<ObjectReader> ObjectReader::open(Json const& j, JsonAt at, std::vector<std::string> fields) {
  if (!j.is_object()) return wrong_type(j, at, "an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(fields.begin(), fields.end(), it.key()) != fields.end()) continue;
    std::string list;
    for (auto const& f : fields) list += (list.empty() ? "" : ", ") + f;
    return json_error(ErrorCode::kParse, at,
                      "unknown field '" + clip(it.key()) + "'; expected one of " + list +
                          did_you_mean(it.key(), fields));
  }
  return ObjectReader(&j, std::move(at));
}

Error ObjectReader::missing(char const* name) const {
  return json_error(ErrorCode::kParse, at_, std::string("missing field '") + name + "'");
}

}  // namespace moetune::core
