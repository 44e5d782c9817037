// FlatJson: a scanner for the flat JSON objects of the worker protocol, the knob cache and the
// store's sample arrays. Each member is kept as raw text; nested values go to core's strict
// parse_*_json (STYLE 3: no JSON library outside core/json_io).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace moetune::core {

/// A JSON string literal (quotes, backslashes and control characters escaped).
std::string json_string(std::string_view s);
/// A JSON number that reads back to the same double; non-finite values become null.
std::string json_double(double v);
/// A JSON array of numbers.
std::string json_doubles(std::vector<double> const& v);
/// Parses json_doubles' text (null elements read as NaN).
Result<std::vector<double>> parse_doubles(std::string_view raw, std::string const& where);

/// The members of one flat JSON object, each kept as its raw text (a scanner, not a parser of
/// nested values: those go to core's parse_*_json).
class FlatJson {
 public:
  /// Fails (kParse) on anything but one object with unique string keys.
  static Result<FlatJson> parse(std::string_view text, std::string const& where);
  /// The elements of a JSON array's raw text, each raw.
  static Result<std::vector<std::string>> split_array(std::string_view raw,
                                                      std::string const& where);
  /// A JSON string literal's value (escapes decoded).
  static Result<std::string> unquote(std::string_view raw, std::string const& where);

  bool has(std::string const& key) const { return fields_.count(key) > 0; }
  std::string const& raw(std::string const& key) const { return fields_.at(key); }
  Result<std::string> string(std::string const& key) const;
  /// A number; null reads as NaN (json_number writes non-finite values as null).
  Result<double> number(std::string const& key) const;
  Result<bool> boolean(std::string const& key) const;

 private:
  core::Error missing(std::string const& key) const;
  std::map<std::string, std::string> fields_;
  std::string where_;
};

}  // namespace moetune::core
