// parse_json: nlohmann's SAX parser feeding our own tree builder. The builder appends each member
// to its object without nlohmann's ordered_map search (whose inserts made a 100k-key table
// quadratic to read), decides duplicate keys itself (an error naming the object and the key in
// our formats, last-wins in vLLM's as Python's json.load does), and runs after check_json_bytes,
// so no tree is deeper than kMaxJsonDepth. parse_json_streamed hands the members of one object
// (a table's rows) to a callback as each is complete and drops them, so reading a 100k-row table
// never holds its whole tree.
#include <unordered_set>

#include "core/json_bytes.hpp"
#include "core/json_io.hpp"
#include "core/names.hpp"

namespace moetune::core {

namespace {

/// Objects with more members than this check duplicate keys with a hash set; smaller ones (every
/// object but a table's rows) search their members, which allocates nothing.
constexpr size_t kLinearKeySearch = 16;

/// One open array or object: the value, its name in its parent (a key, or an index in an array),
/// and the keys seen so far once the object is large or streamed.
struct Frame {
  Json* value;
  std::string name;
  int64_t index = -1;  ///< >= 0 when the parent is an array
  bool on_stream_path = false;
  bool streamed = false;        ///< its members go to the callback one by one and are not kept
  bool member_repeats = false;  ///< streamed: the member being read repeats an earlier key
  std::unordered_set<std::string> keys;
};

class TreeBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  TreeBuilder(std::string const& file, DuplicateKeys dup,
              std::vector<std::string> const* stream_path = nullptr,
              JsonMemberFn const* on_member = nullptr)
      : file_(file), dup_(dup), stream_path_(stream_path), on_member_(on_member) {}

  bool null() { return done(add(Json(nullptr))); }
  bool boolean(bool v) { return done(add(Json(v))); }
  bool number_integer(number_integer_t v) { return done(add(Json(v))); }
  bool number_unsigned(number_unsigned_t v) { return done(add(Json(v))); }
  bool number_float(number_float_t v, string_t const&) { return done(add(Json(v))); }
  bool string(string_t& v) { return done(add(Json(std::move(v)))); }
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
  std::optional<Error> error;  ///< a duplicate key, or the member callback's error
  size_t syntax_byte_ = 0;
  std::string syntax_what_;  ///< nlohmann's message when the text is malformed

 private:
  Json* add(Json value);
  bool open(Json value);
  bool close() {
    stack_.pop_back();
    return done(true);
  }
  /// After a value is complete: hands a streamed object's member to the callback and drops it.
  bool done(bool ok);
  /// Where frame `depth` sits, built only for a message.
  JsonAt at_of(size_t depth) const;

  std::string const& file_;
  DuplicateKeys const dup_;
  std::vector<std::string> const* const stream_path_;
  JsonMemberFn const* const on_member_;
  std::vector<Frame> stack_;
  std::string pending_key_;
  std::optional<size_t> replace_;  ///< the member a repeated key overwrites (kLastWins)
};

JsonAt TreeBuilder::at_of(size_t depth) const {
  JsonAt at{file_, ""};
  for (size_t i = 1; i <= depth && i < stack_.size(); ++i) {
    at = stack_[i].index >= 0 ? at.index(stack_[i].index) : at.field(stack_[i].name);
  }
  return at;
}

bool TreeBuilder::open(Json value) {
  Frame frame{nullptr, {}, -1, false, false, false, {}};
  if (!stack_.empty()) {
    Frame const& parent = stack_.back();
    if (parent.value->is_array()) {
      frame.index = static_cast<int64_t>(parent.value->size());
    } else {
      frame.name = pending_key_;
    }
  }
  if (stream_path_ != nullptr && value.is_object()) {
    size_t const depth = stack_.size();  // the root is depth 0
    bool const parent_on_path =
        depth == 0 || (stack_.back().on_stream_path && stack_.back().value->is_object());
    frame.on_stream_path = parent_on_path && depth <= stream_path_->size() &&
                           (depth == 0 || (*stream_path_)[depth - 1] == frame.name);
    frame.streamed = frame.on_stream_path && depth == stream_path_->size();
  }
  frame.value = add(std::move(value));
  stack_.push_back(std::move(frame));
  return true;
}

bool TreeBuilder::key(string_t& k) {
  Frame& top = stack_.back();
  auto& members = top.value->get_ref<Json::object_t&>();
  bool seen = false;
  if (top.streamed || members.size() >= kLinearKeySearch) {
    if (!top.streamed && top.keys.empty()) {
      for (auto const& [name, v] : members) top.keys.insert(name);
    }
    seen = !top.keys.insert(k).second;
  } else {
    for (auto const& [name, v] : members) seen = seen || name == k;
  }
  replace_.reset();
  if (top.streamed) top.member_repeats = seen;
  if (seen) {
    if (dup_ == DuplicateKeys::kError) {
      error = json_error(ErrorCode::kParse, at_of(stack_.size() - 1),
                         "key '" + clip(k) + "' appears twice in one object; keep one (JSON " +
                             "readers disagree on which wins)");
      return false;
    }
    // The later value wins in the earlier one's place, as in Python's json.load.
    for (size_t i = 0; i < members.size(); ++i) {
      if ((members.begin() + i)->first == k) replace_ = i;
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
  auto& members = parent.get_ref<Json::object_t&>();
  if (replace_) {
    Json* slot = &(members.begin() + *replace_)->second;
    replace_.reset();
    *slot = std::move(value);
    return slot;
  }
  // Append without ordered_map's linear search: key() has ruled out a duplicate.
  members.Container::emplace_back(pending_key_, std::move(value));
  return &members.back().second;
}

bool TreeBuilder::done(bool ok) {
  if (!ok || stack_.empty() || !stack_.back().streamed) return ok;
  Frame const& top = stack_.back();
  auto& members = top.value->get_ref<Json::object_t&>();
  if (members.empty()) return true;
  Status status = (*on_member_)(members.back().first, members.back().second, top.member_repeats);
  members.Container::pop_back();
  if (!status.ok()) {
    error = status.error();
    return false;
  }
  return true;
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

Result<Json> parse_with(TreeBuilder& builder, std::string_view text, std::string const& file) {
  MOETUNE_RETURN_IF_ERROR(check_json_bytes(text, file));
  try {
    if (Json::sax_parse(text.begin(), text.end(), &builder)) return std::move(builder.root);
  } catch (std::exception const& e) {
    return make_error(ErrorCode::kParse, file,
                      std::string("malformed JSON: ") + clip(e.what(), 200));
  }
  if (builder.error) return *builder.error;
  return syntax_error(text, file, builder.syntax_byte_, builder.syntax_what_);
}

}  // namespace

Result<Json> parse_json(std::string_view text, std::string const& file, DuplicateKeys dup) {
  TreeBuilder builder(file, dup);
  return parse_with(builder, text, file);
}

Result<Json> parse_json_streamed(std::string_view text, std::string const& file, DuplicateKeys dup,
                                 std::vector<std::string> const& stream_path,
                                 JsonMemberFn const& on_member) {
  TreeBuilder builder(file, dup, &stream_path, &on_member);
  return parse_with(builder, text, file);
}

}  // namespace moetune::core
