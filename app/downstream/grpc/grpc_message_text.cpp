// A gRPC answer's data as text (docs/grpc.md): json_text, nlohmann's dump() of a value written
// faster, and message_text, the same text written straight from a parsed message in the walk
// message_json takes (grpc/message_walk.hpp), without the nlohmann value in between: the book
// page's answers had their value built through reflection (~38k instructions a page) and then
// written (~22k) only to be sent (bench/callgrind.sh, docs/performance.md's fifth round).
#include "gather/downstream/grpc/grpc_message_json.hpp"

#include "grpc/message_walk.hpp"

#include <charconv>
#include <cstdint>

#include "gather/values/json_plain.hpp"

namespace gather::grpc {

using nlohmann::json;

namespace {

template <class Integer> void put_digits(std::string& out, Integer v) {
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
}

/// A string nlohmann writes as it is (printable ASCII but `"` and `\\`: it escapes nothing else)
/// copied; any other by nlohmann.
void put_string(std::string& out, const std::string& text) {
  const std::size_t at = out.size();
  out.resize(at + text.size() + 2);
  out[at] = '"';
  if (copy_plain_json(out.data() + at + 1, text) != text.size()) {
    out.resize(at);
    out += json(text).dump();
    return;
  }
  out.back() = '"';
}

void put_text(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!first)
          out += ',';
        first = false;
        put_string(out, it.key());
        out += ':';
        put_text(out, it.value());
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& member : value) {
        if (!first)
          out += ',';
        first = false;
        put_text(out, member);
      }
      out += ']';
      return;
    }
    case json::value_t::string: return put_string(out, value.get_ref<const std::string&>());
    case json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return;
    case json::value_t::null: out += "null"; return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: {
      if (value.is_number_unsigned())
        put_digits(out, value.get<std::uint64_t>());
      else
        put_digits(out, value.get<std::int64_t>());
      return;
    }
    default: out += value.dump(); return; // a float, binary, discarded: nlohmann's own text
  }
}

} // namespace

std::string json_text(const json& value) {
  std::string out;
  out.reserve(256);
  put_text(out, value);
  return out;
}


namespace {

/// Writes what json_text writes of the value the value sink would build: members come in the
/// walk's (sorted) order, so a member or an element is preceded by a comma unless it is the first.
class text_sink {
public:
  explicit text_sink(std::string& out) : out_(out) {}
  void begin_object() { out_ += '{'; }
  void begin_array() { out_ += '['; }
  void end_object() { out_ += '}'; }
  void end_array() { out_ += ']'; }
  void field(const field_orders::field_key& key) {
    comma('{');
    out_ += key.quoted;
  }
  void key(const std::string& key) {
    comma('{');
    put_string(out_, key);
    out_ += ':';
  }
  void element() { comma('['); }
  void integer(std::int64_t v) { put_digits(out_, v); }
  void unsigned_integer(std::uint64_t v) { put_digits(out_, v); }
  template <class Integer> void quoted(Integer v) {
    out_ += '"';
    put_digits(out_, v);
    out_ += '"';
  }
  void string(const std::string& text) { put_string(out_, text); }
  void number(double v) { out_ += json(v).dump(); } // nlohmann's float text, as json_text's
  void boolean(bool v) { out_ += v ? "true" : "false"; }
  void null() { out_ += "null"; }

private:
  void comma(char open) {
    if (out_.back() != open)
      out_ += ',';
  }
  std::string& out_;
};

} // namespace

bool message_text(const google::protobuf::Message& message, std::string& out, const field_orders* orders) {
  const field_orders own;
  const std::size_t at = out.size();
  text_sink sink(out);
  walk::walker<text_sink> walker(sink, orders ? *orders : own);
  if (walker.message(message))
    return true;
  out.resize(at);
  return false;
}

} // namespace gather::grpc
