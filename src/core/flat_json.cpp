// FlatJson and the JSON number/string helpers; see flat_json.hpp.
#include "core/flat_json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/json_bytes.hpp"
#include "core/names.hpp"

namespace moetune::core {
namespace {

core::Error parse_error(std::string const& where, std::string message) {
  return core::make_error(core::ErrorCode::kParse, where, std::move(message));
}

size_t skip_ws(std::string_view t, size_t i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) ++i;
  return i;
}

/// End (one past) of the JSON value starting at t[i], or npos when malformed.
size_t value_end(std::string_view t, size_t i) {
  if (i >= t.size()) return std::string_view::npos;
  if (t[i] == '"') {
    for (size_t j = i + 1; j < t.size(); ++j) {
      if (t[j] == '\\') {
        ++j;
      } else if (t[j] == '"') {
        return j + 1;
      }
    }
    return std::string_view::npos;
  }
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    for (size_t j = i; j < t.size(); ++j) {
      char const c = t[j];
      if (c == '"') {
        j = value_end(t, j);
        if (j == std::string_view::npos) return j;
        --j;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return j + 1;
      }
    }
    return std::string_view::npos;
  }
  size_t j = i;
  while (j < t.size() && t[j] != ',' && t[j] != '}' && t[j] != ']' && t[j] != ' ') ++j;
  return j == i ? std::string_view::npos : j;
}

}  // namespace

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    char const c = s[i];
    if (size_t const n = utf8_length(s, i); n > 1) {
      out.append(s.substr(i, n));
      i += n - 1;
      continue;
    } else if (n == 0) {
      // JSON text is UTF-8: a byte that is not (0xFF in a device or file name) becomes U+FFFD,
      // as the JSON library's writer does, rather than make the whole output unreadable.
      out += "\\ufffd";
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_double(double v) {
  if (!std::isfinite(v)) return "null";
  for (int precision = 1; precision <= 17; ++precision) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) return buf;
  }
  return "null";
}

std::string json_doubles(std::vector<double> const& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + json_double(v[i]);
  return out + "]";
}

Result<std::vector<double>> parse_doubles(std::string_view raw, std::string const& where) {
  auto items = FlatJson::split_array(raw, where);
  if (!items.ok()) return items.error();
  std::vector<double> out;
  for (std::string const& item : *items) {
    if (item == "null") {
      out.push_back(NAN);
      continue;
    }
    char* end = nullptr;
    double const v = std::strtod(item.c_str(), &end);
    if (end != item.c_str() + item.size()) {
      return parse_error(where, "array element '" + clip(item) + "' is not a number");
    }
    out.push_back(v);
  }
  return out;
}

Result<FlatJson> FlatJson::parse(std::string_view t, std::string const& where) {
  MOETUNE_RETURN_IF_ERROR(check_json_bytes(t, where));  // BOM, NUL, depth: as every reader
  FlatJson out;
  out.where_ = where;
  size_t i = skip_ws(t, 0);
  if (i >= t.size() || t[i] != '{') return parse_error(where, "expected a JSON object");
  i = skip_ws(t, i + 1);
  if (i < t.size() && t[i] == '}') return out;
  while (true) {
    size_t const key_end = value_end(t, i);
    if (i >= t.size() || t[i] != '"' || key_end == std::string_view::npos) {
      return parse_error(where, "expected a string key at offset " + std::to_string(i));
    }
    auto key = unquote(t.substr(i, key_end - i), where);
    if (!key.ok()) return key.error();
    i = skip_ws(t, key_end);
    if (i >= t.size() || t[i] != ':') return parse_error(where, "expected ':' after " + clip(*key));
    i = skip_ws(t, i + 1);
    size_t const end = value_end(t, i);
    if (end == std::string_view::npos)
      return parse_error(where, "malformed value of " + clip(*key));
    if (!out.fields_.emplace(*key, std::string(t.substr(i, end - i))).second) {
      return parse_error(where, "duplicate key '" + clip(*key) + "'");
    }
    i = skip_ws(t, end);
    if (i < t.size() && t[i] == ',') {
      i = skip_ws(t, i + 1);
      continue;
    }
    if (i < t.size() && t[i] == '}' && skip_ws(t, i + 1) == t.size()) return out;
    return parse_error(where, "expected ',' or a final '}' at offset " + std::to_string(i));
  }
}

Result<std::vector<std::string>> FlatJson::split_array(std::string_view t,
                                                       std::string const& where) {
  std::vector<std::string> out;
  size_t i = skip_ws(t, 0);
  if (i >= t.size() || t[i] != '[') return parse_error(where, "expected a JSON array");
  i = skip_ws(t, i + 1);
  if (i < t.size() && t[i] == ']') return out;
  while (true) {
    size_t const end = value_end(t, i);
    if (end == std::string_view::npos) return parse_error(where, "malformed array element");
    out.emplace_back(t.substr(i, end - i));
    i = skip_ws(t, end);
    if (i < t.size() && t[i] == ',') {
      i = skip_ws(t, i + 1);
      continue;
    }
    if (i < t.size() && t[i] == ']') return out;
    return parse_error(where, "expected ',' or ']' in an array");
  }
}

Result<std::string> FlatJson::unquote(std::string_view raw, std::string const& where) {
  if (raw.size() < 2 || raw.front() != '"' || raw.back() != '"') {
    return parse_error(where, "expected a string, saw " + std::string(raw.substr(0, 40)));
  }
  std::string out;
  for (size_t i = 1; i + 1 < raw.size(); ++i) {
    char c = raw[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (i + 2 >= raw.size()) return parse_error(where, "dangling escape in a string");
    c = raw[++i];
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        if (i + 4 >= raw.size()) return parse_error(where, "short \\u escape");
        unsigned const code = std::strtoul(std::string(raw.substr(i + 1, 4)).c_str(), nullptr, 16);
        i += 4;
        if (code < 0x80) {
          out += static_cast<char>(code);
        } else if (code < 0x800) {
          out += static_cast<char>(0xC0 | (code >> 6));
          out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (code >> 12));
          out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (code & 0x3F));
        }
        break;
      }
      default: out += c;  // '"', '\\', '/'
    }
  }
  return out;
}

core::Error FlatJson::missing(std::string const& key) const {
  return parse_error(where_, "missing field '" + key + "'");
}

Result<std::string> FlatJson::string(std::string const& key) const {
  if (!has(key)) return missing(key);
  return unquote(raw(key), where_ + ": " + key);
}

Result<double> FlatJson::number(std::string const& key) const {
  if (!has(key)) return missing(key);
  std::string const& text = raw(key);
  if (text == "null") return NAN;
  char* end = nullptr;
  double const v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    return parse_error(where_, "field '" + clip(key) + "' is '" + clip(text) + "', not a number");
  }
  return v;
}

Result<bool> FlatJson::boolean(std::string const& key) const {
  if (!has(key)) return missing(key);
  if (raw(key) == "true") return true;
  if (raw(key) == "false") return false;
  return parse_error(where_,
                     "field '" + clip(key) + "' is '" + clip(raw(key)) + "', not true or false");
}

}  // namespace moetune::core
