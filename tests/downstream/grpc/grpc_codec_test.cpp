// The gRPC codec (gather/downstream/grpc/grpc_wire.hpp, grpc_json.hpp): frames, grpc-timeout, statuses
// and what they mean for a section, the message rendered from its template, JSON to bytes and
// back over the descriptors protoc made for the tests.
#include <catch2/catch.hpp>

#include "gather/config/config.hpp"
#include "gather/downstream/grpc/grpc_answer.hpp"
#include "gather/downstream/grpc/grpc_json.hpp"
#include "gather/downstream/grpc/grpc_wire.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"

namespace grpc = gather::grpc;
using json = nlohmann::json;

namespace {

std::shared_ptr<const gather::proto_catalog> codec_catalog() {
  json cfg = {{"protos", {{"descriptor_sets", {GATHER_TEST_DESCRIPTOR_SET}}}},
              {"routes", {{{"path", "/books/{isbn}"},
                           {"sections", {{{"name", "meta"}, {"timeout_ms", 300}, {"required", true},
                                          {"grpc", {{"target", "http://127.0.0.1:1"},
                                                    {"method", "linkd.v3.Library/GetBook"},
                                                    {"message", {{"isbn", "{isbn}"}}}}}}}}}}}};
  auto loaded = gather::load_config(cfg.dump());
  REQUIRE(loaded.value);
  REQUIRE(gather::attach_proto_catalog(*loaded.value).empty());
  return loaded.value->descriptors;
}

const google::protobuf::Descriptor& type_named(const gather::proto_catalog& catalog, const std::string& name) {
  const auto* type = catalog.pool->FindMessageTypeByName(name);
  REQUIRE(type);
  return *type;
}

} // namespace

TEST_CASE("a frame is its message behind a 5-byte prefix", "[unit][grpc]") {
  CHECK(grpc::frame("") == std::string(5, '\0'));
  CHECK(grpc::frame("abc") == std::string("\0\0\0\0\3abc", 8));
  const std::string big(70000, 'x');
  const auto framed = grpc::frame(big);
  CHECK(framed.substr(0, 5) == std::string("\0\0\x01\x11\x70", 5));
}

TEST_CASE("the frame reader reassembles messages however the chunks cut them", "[unit][grpc]") {
  const std::string stream = grpc::frame("first") + grpc::frame("") + grpc::frame(std::string(300, 'z'));
  for (std::size_t cut = 1; cut <= stream.size(); ++cut) {
    grpc::frame_reader reader(1000, 10000);
    std::vector<std::string> messages;
    for (std::size_t at = 0; at < stream.size(); at += cut)
      REQUIRE(reader.feed(std::string_view(stream).substr(at, cut), messages));
    REQUIRE(messages.size() == 3);
    CHECK(messages[0] == "first");
    CHECK(messages[1].empty());
    CHECK(messages[2] == std::string(300, 'z'));
    CHECK_FALSE(reader.inside_message());
  }
}

TEST_CASE("the frame reader refuses what the gateway never accepts", "[unit][grpc]") {
  std::vector<std::string> messages;
  SECTION("a compressed message") {
    grpc::frame_reader reader(1000, 1000);
    std::string compressed = grpc::frame("abc");
    compressed[0] = 1;
    CHECK_FALSE(reader.feed(compressed, messages));
    CHECK(reader.error() == "a compressed message (the gateway asks for none)");
    CHECK_FALSE(reader.feed(grpc::frame("x"), messages)); // broken for good
  }
  SECTION("a flag that does not exist") {
    grpc::frame_reader reader(1000, 1000);
    CHECK_FALSE(reader.feed(std::string("\x07\0\0\0\0", 5), messages));
  }
  SECTION("a 100 MB prefix is refused from the prefix, before any byte of it is held") {
    grpc::frame_reader reader(8 << 20, 8 << 20);
    CHECK_FALSE(reader.feed(std::string("\0\x06\x40\0\0", 5), messages)); // 104857600
    CHECK(reader.error().find("passes max_response_bytes") != std::string::npos);
  }
  SECTION("messages over the stream's total") {
    grpc::frame_reader reader(100, 150);
    CHECK(reader.feed(grpc::frame(std::string(100, 'a')), messages));
    CHECK_FALSE(reader.feed(grpc::frame(std::string(51, 'b')), messages));
    CHECK(messages.size() == 1);
  }
  SECTION("a length prefix larger than the data: the stream ends inside a message") {
    grpc::frame_reader reader(1000, 1000);
    CHECK(reader.feed(std::string("\0\0\0\0\x09" "abc", 8), messages));
    CHECK(messages.empty());
    CHECK(reader.inside_message());
  }
  CHECK(messages.size() <= 1);
}

TEST_CASE("grpc-timeout is whole milliseconds, at most 8 digits", "[unit][grpc]") {
  CHECK(grpc::timeout_text(gather::millis{300}) == "300m");
  CHECK(grpc::timeout_text(gather::millis{0}) == "1m");
  CHECK(grpc::timeout_text(gather::millis{99999999}) == "99999999m");
  CHECK(grpc::timeout_text(gather::millis{100000000}) == "100000S");
  CHECK(grpc::timeout_text(gather::millis{100000000001}) == "1666667M");
}

TEST_CASE("grpc-status and grpc-message are read leniently", "[unit][grpc]") {
  CHECK(grpc::parse_status("0") == 0);
  CHECK(grpc::parse_status("14") == 14);
  CHECK(grpc::parse_status("99") == 99);
  CHECK_FALSE(grpc::parse_status(""));
  CHECK_FALSE(grpc::parse_status(" 5"));
  CHECK_FALSE(grpc::parse_status("-1"));
  CHECK_FALSE(grpc::parse_status("1234567890"));
  CHECK(grpc::decode_message("no%20such%20book") == "no such book");
  CHECK(grpc::decode_message("%E4%BD%A0") == "\xe4\xbd\xa0");
  CHECK(grpc::decode_message("100%") == "100%");
  CHECK(grpc::decode_message("%zz%4") == "%zz%4");
  CHECK(grpc::decode_message("50%-off") == "50%-off");
}

TEST_CASE("gRPC codes: names, HTTP statuses, section statuses, retries, required errors",
          "[unit][grpc]") {
  CHECK(std::string(grpc::code_name(0)) == "OK");
  CHECK(std::string(grpc::code_name(5)) == "NOT_FOUND");
  CHECK(std::string(grpc::code_name(16)) == "UNAUTHENTICATED");
  CHECK(std::string(grpc::code_name(17)) == "UNKNOWN");
  CHECK(std::string(grpc::code_name(-1)) == "UNKNOWN");
  CHECK(grpc::code_of_http_status(404) == grpc::unimplemented);
  CHECK(grpc::code_of_http_status(503) == grpc::unavailable);
  CHECK(grpc::code_of_http_status(429) == grpc::unavailable);
  CHECK(grpc::code_of_http_status(401) == grpc::unauthenticated);
  CHECK(grpc::code_of_http_status(200) == grpc::unknown);
  CHECK(grpc::status_of(grpc::ok) == gather::section_status::ok);
  CHECK(grpc::status_of(grpc::deadline_exceeded) == gather::section_status::timeout);
  CHECK(grpc::status_of(grpc::not_found) == gather::section_status::error);
  CHECK(grpc::retryable(grpc::unavailable));
  CHECK(grpc::retryable(grpc::resource_exhausted));
  CHECK(grpc::retryable(grpc::deadline_exceeded));
  CHECK_FALSE(grpc::retryable(grpc::not_found));
  CHECK_FALSE(grpc::retryable(grpc::internal));
  CHECK(grpc::required_failure_of(gather::section_status::error, grpc::not_found).http_status == 404);
  CHECK(std::string(grpc::required_failure_of(gather::section_status::error, grpc::not_found).error) == "not_found");
  CHECK(grpc::required_failure_of(gather::section_status::timeout, grpc::deadline_exceeded).http_status == 504);
  CHECK(grpc::required_failure_of(gather::section_status::timeout, -1).http_status == 504);
  CHECK(grpc::required_failure_of(gather::section_status::error, grpc::unavailable).http_status == 503);
  CHECK(grpc::required_failure_of(gather::section_status::error, grpc::permission_denied).http_status == 503);
}

TEST_CASE("a message is rendered from its template", "[unit][grpc]") {
  gather::grpc_call_config call;
  call.message = {{"isbn", "{isbn}"}, {"n", "{item}"}, {"text", "q={query.q}&n={item}"},
                  {"keep", 1}, {"label", "{item}"}};
  const auto part = [](gather::url_part::kind what, std::string name) {
    return gather::url_part{what, std::move(name), {}, 0};
  };
  using kind = gather::url_part::kind;
  call.placeholders = {{"/isbn", {"{isbn}", {part(kind::capture, "isbn")}}, true},
                       {"/n", {"{item}", {part(kind::item, "item")}}, true},
                       {"/text", {"q={query.q}&n={item}", {part(kind::literal, "q="), part(kind::query, "q"),
                                                           part(kind::literal, "&n="), part(kind::item, "item")}}, false},
                       {"/label", {"{item}", {part(kind::item, "item")}}, true}};
  const std::vector<bool> as_text{true, false, true, true};
  const auto resolve = [](const gather::url_part& p) -> std::optional<json> {
    if (p.what == kind::capture)
      return json("978-7");
    if (p.what == kind::query)
      return json("a b/&");
    return json(7);
  };
  auto rendered = grpc::render_message(call, as_text, resolve);
  REQUIRE(rendered);
  CHECK(*rendered == json{{"isbn", "978-7"}, {"n", 7}, {"text", "q=a b/&&n=7"}, {"keep", 1}, {"label", "7"}});
  CHECK_FALSE(grpc::render_message(call, as_text, [](const gather::url_part&) -> std::optional<json> {
    return std::nullopt;
  }));
}

TEST_CASE("JSON to bytes and back, with the three print choices", "[unit][grpc]") {
  const auto catalog = codec_catalog();
  const grpc::message_types types{*catalog->resolver, *catalog->factory};
  const auto& book = type_named(*catalog, "linkd.v3.Book");
  const auto bytes = grpc::encode_message(
      types, book, {{"isbn", "978"}, {"stock", 0}, {"format", "EBOOK"}, {"sold", "12345678901234"}});
  REQUIRE(bytes.ok);
  const auto decoded = grpc::decode_message(types, book, bytes.text);
  REQUIRE(decoded.ok);
  const auto data = json::parse(decoded.text);
  CHECK(data == json{{"isbn", "978"}, {"title", ""}, {"author", ""}, {"stock", 0},
                     {"format", "EBOOK"}, {"sold", "12345678901234"}, {"tags", json::array()}});
  CHECK(data.dump().find("published") == std::string::npos); // an unset message is left out

  const auto bad = grpc::encode_message(types, type_named(*catalog, "linkd.v3.SearchBooksRequest"),
                                        {{"page_size", "abc"}});
  CHECK_FALSE(bad.ok);
  CHECK_FALSE(bad.error.empty());
  CHECK_FALSE(grpc::encode_message(types, book, {{"nope", 1}}).ok);
  CHECK_FALSE(grpc::decode_message(types, book, std::string("\xff\xff\xff\xff", 4)).ok);
  CHECK_FALSE(grpc::decode_message(types, book, std::string("\x0a\x10" "ab", 4)).ok); // cut short
}

namespace {

const grpc::fields grpc_head{{"content-type", "application/grpc"}};

grpc::fields status_fields(const std::string& code, const std::string& message = "") {
  grpc::fields out{{"grpc-status", code}};
  if (!message.empty())
    out.emplace_back("grpc-message", message);
  return out;
}

} // namespace

TEST_CASE("a unary answer: head, one message, trailers", "[unit][grpc]") {
  grpc::answer_reader reader(0, 1000);
  REQUIRE(reader.on_head(200, grpc_head, false));
  const auto framed = grpc::frame("book");
  REQUIRE(reader.on_data(framed.substr(0, 3)));
  REQUIRE(reader.on_data(framed.substr(3)));
  reader.on_trailers(status_fields("0"));
  auto result = reader.finish(grpc::stream_end_kind::complete);
  CHECK(result.code == grpc::ok);
  CHECK(result.messages == std::vector<std::string>{"book"});
  CHECK(result.http_status == 200);
}

TEST_CASE("a Trailers-Only answer carries the status in its head", "[unit][grpc]") {
  grpc::answer_reader reader(0, 1000);
  auto head = grpc_head;
  for (auto& field : status_fields("5", "no%20such%20book: %C3%A9 100%"))
    head.push_back(field);
  CHECK(reader.on_head(200, head, true));
  auto result = reader.finish(grpc::stream_end_kind::complete);
  CHECK(result.code == grpc::not_found);
  CHECK(result.message == "no such book: \xc3\xa9 100%");
  CHECK(result.messages.empty());
}

TEST_CASE("a stream is cut at max_messages, ends early with OK, or fails as a whole", "[unit][grpc]") {
  std::string ten;
  for (int i = 0; i < 10; ++i)
    ten += grpc::frame("m" + std::to_string(i));
  SECTION("taken to 5: stop at once, OK with the first 5") {
    grpc::answer_reader reader(5, 1000);
    REQUIRE(reader.on_head(200, grpc_head, false));
    CHECK_FALSE(reader.on_data(ten)); // all ten in one chunk: still only five
    auto result = reader.finish(grpc::stream_end_kind::stopped);
    CHECK(result.code == grpc::ok);
    CHECK(result.cut);
    CHECK(result.messages.size() == 5);
    CHECK(result.messages[4] == "m4");
  }
  SECTION("3 then OK") {
    grpc::answer_reader reader(5, 1000);
    REQUIRE(reader.on_head(200, grpc_head, false));
    REQUIRE(reader.on_data(ten.substr(0, 3 * 7)));
    reader.on_trailers(status_fields("0"));
    auto result = reader.finish(grpc::stream_end_kind::complete);
    CHECK(result.code == grpc::ok);
    CHECK_FALSE(result.cut);
    CHECK(result.messages.size() == 3);
  }
  SECTION("2 then INTERNAL: no partial list") {
    grpc::answer_reader reader(5, 1000);
    REQUIRE(reader.on_head(200, grpc_head, false));
    REQUIRE(reader.on_data(ten.substr(0, 2 * 7)));
    reader.on_trailers(status_fields("13", "broke"));
    auto result = reader.finish(grpc::stream_end_kind::complete);
    CHECK(result.code == grpc::internal);
    CHECK(result.messages.empty());
  }
  SECTION("2 then the call's timeout") {
    grpc::answer_reader reader(5, 1000);
    REQUIRE(reader.on_head(200, grpc_head, false));
    REQUIRE(reader.on_data(ten.substr(0, 2 * 7)));
    auto result = reader.finish(grpc::stream_end_kind::timeout);
    CHECK(result.code == grpc::deadline_exceeded);
    CHECK(result.messages.empty());
  }
}

TEST_CASE("answers that are not gRPC get the status gRPC clients synthesize", "[unit][grpc]") {
  SECTION("a 503 page") {
    grpc::answer_reader reader(0, 1000);
    CHECK_FALSE(reader.on_head(503, {{"content-type", "text/html"}}, false));
    auto result = reader.finish(grpc::stream_end_kind::stopped);
    CHECK(result.code == grpc::unavailable);
    CHECK(result.http_status == 503);
  }
  SECTION("HTML with 200") {
    grpc::answer_reader reader(0, 1000);
    CHECK_FALSE(reader.on_head(200, {{"content-type", "text/html; charset=utf-8"}}, false));
    CHECK(reader.finish(grpc::stream_end_kind::stopped).code == grpc::unknown);
  }
  SECTION("application/grpc-web is not application/grpc") {
    grpc::answer_reader reader(0, 1000);
    CHECK_FALSE(reader.on_head(200, {{"content-type", "application/grpc-web"}}, false));
  }
  SECTION("no trailers") {
    grpc::answer_reader reader(0, 1000);
    REQUIRE(reader.on_head(200, {{"content-type", "application/grpc+proto"}}, false));
    REQUIRE(reader.on_data(grpc::frame("x")));
    auto result = reader.finish(grpc::stream_end_kind::complete);
    CHECK(result.code == grpc::unknown);
    CHECK(result.detail == "the answer ended without grpc-status");
    CHECK(result.messages.empty());
  }
  SECTION("a length prefix larger than the data") {
    grpc::answer_reader reader(0, 1000);
    REQUIRE(reader.on_head(200, grpc_head, false));
    REQUIRE(reader.on_data(std::string("\0\0\0\0\x09" "abc", 8)));
    reader.on_trailers(status_fields("0"));
    CHECK(reader.finish(grpc::stream_end_kind::complete).code == grpc::internal);
  }
  SECTION("a compressed message, a message over max_response_bytes") {
    grpc::answer_reader reader(0, 10);
    REQUIRE(reader.on_head(200, grpc_head, false));
    CHECK_FALSE(reader.on_data(grpc::frame(std::string(11, 'x'))));
    CHECK(reader.finish(grpc::stream_end_kind::stopped).code == grpc::internal);
    grpc::answer_reader compressed(0, 10);
    REQUIRE(compressed.on_head(200, grpc_head, false));
    CHECK_FALSE(compressed.on_data(std::string("\x01\0\0\0\x01x", 6)));
  }
  SECTION("OK without a message, two messages for a unary method") {
    grpc::answer_reader none(0, 1000);
    REQUIRE(none.on_head(200, grpc_head, false));
    none.on_trailers(status_fields("0"));
    CHECK(none.finish(grpc::stream_end_kind::complete).code == grpc::internal);
    grpc::answer_reader two(0, 1000);
    REQUIRE(two.on_head(200, grpc_head, false));
    CHECK_FALSE(two.on_data(grpc::frame("a") + grpc::frame("b")));
    CHECK(two.finish(grpc::stream_end_kind::stopped).code == grpc::internal);
  }
  SECTION("a grpc-status that is not a number") {
    grpc::answer_reader reader(3, 1000);
    REQUIRE(reader.on_head(200, grpc_head, false));
    reader.on_trailers(status_fields("ok"));
    CHECK(reader.finish(grpc::stream_end_kind::complete).code == grpc::unknown);
  }
}

TEST_CASE("how a stream ends without a status gives its code", "[unit][grpc]") {
  const auto ended = [](grpc::stream_end_kind how, std::uint32_t reset = 0) {
    grpc::answer_reader reader(0, 1000);
    return reader.finish(how, reset).code;
  };
  CHECK(ended(grpc::stream_end_kind::timeout) == grpc::deadline_exceeded);
  CHECK(ended(grpc::stream_end_kind::unavailable) == grpc::unavailable);
  CHECK(ended(grpc::stream_end_kind::reset, 0x8) == grpc::cancelled);
  CHECK(ended(grpc::stream_end_kind::reset, 0x7) == grpc::unavailable);
  CHECK(ended(grpc::stream_end_kind::reset, 0xb) == grpc::resource_exhausted);
  CHECK(ended(grpc::stream_end_kind::reset, 0x2) == grpc::internal);
  CHECK(ended(grpc::stream_end_kind::too_large) == grpc::internal);
  CHECK(ended(grpc::stream_end_kind::protocol) == grpc::internal);
}
