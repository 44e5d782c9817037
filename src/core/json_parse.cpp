// parse_json: nlohmann's SAX parser feeding our own tree builder. The builder appends each member
// to its object without nlohmann's ordered_map search (whose inserts made a 100k-key table
// quadratic to read), decides duplicate keys itself (an error naming the object and the key in
// our formats, last-wins in vLLM's as Python's json.load does), and runs after check_json_bytes,
// so no tree is deeper than kMaxJsonDepth.
#include <unordered_set>

#include "core/json_bytes.hpp"
#include "core/json_io.hpp"
#include "core/names.hpp"

namespace moetune::core {

namespace {

/// One open array or object: the value, where it sits, and the keys seen so far (objects).
struct Frame {
  Json* value;
  JsonAt at;
  std::unordered_set<std::string> keys;
};

class TreeBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  TreeBuilder(std::string const& file, DuplicateKeys dup) : file_(file), dup_(dup) {}

  bool null() { return add(Json(nullptr)) != nullptr; }
  bool boolean(bool v) { return add(Json(v)) != nullptr; }
  bool number_integer(number_integer_t v) { return add(Json(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) { return add(Json(v)) != nullptr; }
  bool number_float(number_float_t v, string_t const&) { return add(Json(v)) != nullptr; }
  bool string(string_t& v) { return add(Json(std::move(v))) != nullptr; }
  bool binary(binary_t&) { return false; }  // JSON text has no binary values
  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(string_t& k);
  bool parse_error(std::size_t position, std::string const&, nlohmann::detail::exception const& e) {
    syntax_byte_ = position;
    syntax_what_ = e.what();
    return false;
  }

  Json root;
  std::optional<Error> error;  ///< a duplicate key
  size_t syntax_byte_ = 0;
  std::string syntax_what_;  ///< nlohmann's message when the text is malformed

 private:
  Json* add(Json value);
  bool open(Json value) {
    JsonAt at = child_at();
    Json* j = add(std::move(value));
    stack_.push_back(Frame{j, std::move(at), {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  JsonAt child_at() const {
    if (stack_.empty()) return JsonAt{file_, ""};
    Frame const& top = stack_.back();
    if (top.value->is_array()) return top.at.index(static_cast<int64_t>(top.value->size()));
    return top.at.field(pending_key_);
  }

  std::string const& file_;
  DuplicateKeys const dup_;
  std::vector<Frame> stack_;
  std::string pending_key_;
};

bool TreeBuilder::key(string_t& k) {
  Frame& top = stack_.back();
  if (!top.keys.insert(k).second) {
    if (dup_ == DuplicateKeys::kError) {
      error = json_error(ErrorCode::kParse, top.at,
                         "key '" + clip(k) + "' appears twice in one object; keep one (JSON " +
                             "readers disagree on which wins)");
      return false;
    }
    auto& members = top.value->get_ref<Json::object_t&>();
    for (auto it = members.begin(); it != members.end(); ++it) {
      if (it->first == k) {
        members.erase(it);  // the later value wins, as in Python's json.load
        break;
      }
    }
  }
  pending_key_ = std::move(k);
  return true;
}

Json* TreeBuilder::add(Json value) {
  if (stack_.empty()) {
    root = std::move(value);
    return &root;
  }
  Json& parent = *stack_.back().value;
  if (parent.is_array()) {
    auto& items = parent.get_ref<Json::array_t&>();
    items.push_back(std::move(value));
    return &items.back();
  }
  // Append without ordered_map's linear search: key() has ruled out a duplicate.
  auto& members = parent.get_ref<Json::object_t&>();
  members.Container::emplace_back(pending_key_, std::move(value));
  return &members.back().second;
}

Error syntax_error(std::string_view text, std::string const& file, size_t byte_pos,
                   std::string what) {
  // Turn the byte offset into line:column so a person can open the spot.
  size_t const byte = std::min<size_t>(byte_pos == 0 ? 0 : byte_pos - 1, text.size());
  int64_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < byte; ++i) {
    if (text[i] == '\n') ++line, line_start = i + 1;
  }
  // nlohmann prefixes "[json.exception.parse_error.101] parse error at line 1, column 2: ".
  size_t const colon = what.find(": ");
  if (colon != std::string::npos) what = what.substr(colon + 2);
  return make_error(ErrorCode::kParse,
                    (file.empty() ? std::string("<json>") : file) + ":" + std::to_string(line),
                    "malformed JSON at column " + std::to_string(byte - line_start + 1) + ": " +
                        clip(what, 200) + "; fix the syntax");
}

}  // namespace

Result<Json> parse_json(std::string_view text, std::string const& file, DuplicateKeys dup) {
  MOETUNE_RETURN_IF_ERROR(check_json_bytes(text, file));
  TreeBuilder builder(file, dup);
  try {
    if (Json::sax_parse(text.begin(), text.end(), &builder)) return std::move(builder.root);
  } catch (std::exception const& e) {
    return make_error(ErrorCode::kParse, file,
                      std::string("malformed JSON: ") + clip(e.what(), 200));
  }
  if (builder.error) return *builder.error;
  return syntax_error(text, file, builder.syntax_byte_, builder.syntax_what_);
}

}  // namespace moetune::core
