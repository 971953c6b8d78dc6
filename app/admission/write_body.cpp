// A write route's body (docs/api.md#write-routes), parsed once: what the body check
// (write_body_check.cpp) runs, and the fuzz target fuzz/fuzz_write_body.cpp.
#include "gather/admission/write_body.hpp"

#include <cctype>
#include <set>
#include <vector>

namespace gather {

namespace {

using json = nlohmann::json;

/// nlohmann's DOM builder, with the checks its own parser does not make: depth and duplicate keys
/// (nlohmann keeps the last of two, a body that means two things to two readers).
class checked_builder {
public:
  explicit checked_builder(json& out) : dom_(out, false) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return dom_.number_float(v, s); }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    keys_.emplace_back();
    objects_.push_back(true);
    return deeper() && dom_.start_object(n);
  }
  bool end_object() {
    keys_.pop_back();
    objects_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    objects_.push_back(false);
    return deeper() && dom_.start_array(n);
  }
  bool end_array() {
    objects_.pop_back();
    return dom_.end_array();
  }
  bool key(json::string_t& k) {
    if (!keys_.back().insert(k).second) {
      problem_ = "the body has the key \"" + printable(k) + "\" twice in one object";
      return false;
    }
    return dom_.key(k);
  }
  bool parse_error(std::size_t at, const std::string&, const nlohmann::detail::exception&) {
    if (problem_.empty())
      problem_ = "the body is not valid JSON (at byte " + std::to_string(at) + ")";
    return false;
  }

  const std::string& problem() const { return problem_; }

private:
  bool deeper() {
    if (objects_.size() <= max_body_depth)
      return true;
    problem_ = "the body is nested deeper than " + std::to_string(max_body_depth) + " levels";
    return false;
  }
  /// A key as the message may quote it: at most 64 printable ASCII bytes.
  static std::string printable(const std::string& key) {
    std::string out;
    for (const unsigned char c : key.substr(0, 64))
      out += c >= 0x20 && c < 0x7f && c != '"' && c != '\\' ? static_cast<char>(c) : '?';
    return out;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::vector<std::set<std::string>> keys_; // the keys of each open object
  std::vector<bool> objects_;               // each open container: an object?
  std::string problem_;
};

} // namespace

write_body parse_write_body(std::string_view text) {
  write_body out;
  auto value = std::make_shared<json>();
  checked_builder builder(*value);
  const bool parsed = json::sax_parse(text.begin(), text.end(), &builder);
  if (!parsed) {
    out.problem = builder.problem().empty() ? "the body is not valid JSON" : builder.problem();
    return out;
  }
  if (!value->is_object()) {
    out.problem = std::string("the body must be a JSON object, not ") +
                  (value->is_array() ? "an array" : value->is_string() ? "a string" : value->type_name());
    return out;
  }
  out.value = std::move(value);
  return out;
}

bool is_json_media_type(std::string_view content_type) {
  const auto semicolon = content_type.find(';');
  auto type = content_type.substr(0, semicolon);
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t'))
    type.remove_prefix(1);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t'))
    type.remove_suffix(1);
  constexpr std::string_view json_type = "application/json";
  if (type.size() != json_type.size())
    return false;
  for (std::size_t i = 0; i < type.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(type[i])) != json_type[i])
      return false;
  return true;
}

} // namespace gather
