// The page's shape, below the gateway: `fields` through arrays, `max_items`, finding a field in
// validated text, and a route's template rendered into the answer (whole and progressive).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "gather/answer/aggregate_response.hpp"
#include "gather/answer/json_member.hpp"
#include "gather/answer/progressive_answer.hpp"
#include "gather/downstream/answer/downstream_answer.hpp"

using gather::field_path;
using gather::section_outcome;
using gather::section_status;
using nlohmann::json;

namespace {

json projected(const json& value, const std::vector<field_path>& fields) {
  return gather::project_fields(value, fields);
}

/// What a section shows of `body` (a 200 from its downstream) with `fields` and `max_items`.
json shown(const std::string& body, const std::vector<field_path>& fields, std::size_t max_items) {
  gather::transfer_result result;
  result.http_status = 200;
  result.body = body;
  auto verdict = gather::classify_answer(std::move(result), fields, max_items);
  REQUIRE(verdict.status == section_status::ok);
  return json::parse(verdict.data);
}

std::string member_text(std::string_view text, const field_path& path) {
  return std::string(gather::find_member(text, path).value_or("<absent>"));
}

section_outcome shape_ok(std::string data) {
  section_outcome o;
  o.status = section_status::ok;
  o.attempts = 1;
  o.data = std::move(data);
  return o;
}

section_outcome shape_failed(section_status status) {
  section_outcome o;
  o.status = status;
  o.attempts = 1;
  return o;
}

gather::config shape_config(const std::string& shape) {
  auto loaded = gather::load_config(R"({"routes": [{"path": "/books/{isbn}", "sections": [
      {"name": "meta", "url": "http://127.0.0.1:1/m", "timeout_ms": 100, "required": true},
      {"name": "related", "url": "http://127.0.0.1:1/r", "timeout_ms": 100, "fallback": [],
       "fields": ["isbn", "title"], "max_items": 5, "warning": "related_unavailable"},
      {"name": "stock", "url": "http://127.0.0.1:1/s", "timeout_ms": 100, "fallback_from": "meta",
       "warning": "stock_unavailable"},
      {"name": "extra", "url": "http://127.0.0.1:1/e", "timeout_ms": 100, "fallback": {"f": [1, {"g": null}]}}],
      "shape": )" + shape + "}]}");
  INFO((loaded.problems.empty() ? "" : loaded.problems.front()));
  REQUIRE(loaded.value);
  return *loaded.value;
}

} // namespace

TEST_CASE("fields: a path that meets an array goes on in each element", "[unit][answer][shape]") {
  const json data = {{"items", {{{"title", "a"}, {"price", 1}}, {{"title", "b"}, {"price", 2}}}},
                     {"total", 2}};
  CHECK(projected(data, {{"items", "title"}}) == json{{"items", {{{"title", "a"}}, {{"title", "b"}}}}});
  // Nested arrays: each level goes on with the same path.
  const json nested = json::parse(R"({"rows": [[{"v": 1, "w": 0}], [{"v": 2}, {"w": 3}], []]})");
  CHECK(projected(nested, {{"rows", "v"}}) == json::parse(R"({"rows": [[{"v": 1}], [{"v": 2}, {}], []]})"));
  // An element that is not an object becomes {}; an object without the field too.
  const json mixed = {{"items", {1, "two", nullptr, {{"other", 1}}, {{"title", "t"}}}}};
  CHECK(projected(mixed, {{"items", "title"}}) ==
        json{{"items", {json::object(), json::object(), json::object(), json::object(), {{"title", "t"}}}}});
  // An empty array stays an empty array; an array at a path's end is kept whole.
  CHECK(projected({{"items", json::array()}}, {{"items", "title"}}) == json{{"items", json::array()}});
  CHECK(projected({{"tags", {"x", "y"}}, {"n", 1}}, {{"tags"}}) == json{{"tags", {"x", "y"}}});
  // Data that is itself an array is projected element by element.
  CHECK(projected(json{{{"isbn", "1"}, {"v", 9}}, {{"isbn", "2"}}}, {{"isbn"}}) ==
        json{{{"isbn", "1"}}, {{"isbn", "2"}}});
  // Objects keep the old rule: an object holding none of the path is left out, a scalar too.
  CHECK(projected({{"a", {{"c", 1}}}, {"b", 2}}, {{"a", "b"}, {"b", "x"}}) == json::object());
  CHECK(projected(json(7), {{"a"}}) == json::object());
  // A shorter path wins over a longer one through the same key.
  CHECK(projected({{"a", {{"b", 1}, {"c", 2}}}}, {{"a", "b"}, {"a"}}) == json{{"a", {{"b", 1}, {"c", 2}}}});
}

TEST_CASE("fields: the DOM built only of what the fields reach projects as the whole one", "[unit][answer][shape]") {
  const std::string body =
      R"({"books": [{"isbn": "1", "title": "A", "notes": [1, 2]}, 5, [{"isbn": "2", "x": {}}]], "skip": {"isbn": 0}})";
  const std::vector<field_path> fields{{"books", "isbn"}};
  CHECK(shown(body, fields, 0) == projected(json::parse(body), fields));
  CHECK(shown(body, fields, 0) == json{{"books", {{{"isbn", "1"}}, json::object(), {{{"isbn", "2"}}}}}});
}

TEST_CASE("max_items keeps an array's first elements, after fields", "[unit][answer][shape]") {
  const std::string list = R"([{"isbn": "1", "t": "a"}, {"isbn": "2", "t": "b"}, {"isbn": "3"}, 4])";
  CHECK(shown(list, {}, 2) == json::parse(R"([{"isbn": "1", "t": "a"}, {"isbn": "2", "t": "b"}])"));
  CHECK(shown(list, {{"isbn"}}, 2) == json::parse(R"([{"isbn": "1"}, {"isbn": "2"}])"));
  CHECK(shown(list, {{"isbn"}}, 0) == json::parse(R"([{"isbn": "1"}, {"isbn": "2"}, {"isbn": "3"}, {}])"));
  CHECK(shown(list, {}, 10) == json::parse(list)); // fewer than N: all of them
  CHECK(shown("  [ ]", {}, 1) == json::array());
  // Data that is not an array is left as it is, spliced as sent (not re-serialized).
  gather::transfer_result object;
  object.http_status = 200;
  object.body = R"({"items": [1, 2, 3]})";
  CHECK(gather::classify_answer(std::move(object), {}, 1).data == R"({"items": [1, 2, 3]})");
  // Only the data's own array is cut, not one inside it.
  CHECK(shown(R"({"items": [1, 2, 3]})", {{"items"}}, 1) == json{{"items", {1, 2, 3}}});
}

TEST_CASE("find_member: a field's bytes in valid JSON text", "[unit][answer][shape]") {
  const std::string text = R"( {"a": {"b" : [1, {"c": "}\"]"}], "d": null}, "s\u0074ock": 12,
                               "e": "x\\", "dup": 1, "dup": {"k": true} } )";
  CHECK(member_text(text, {}) == text.substr(1, text.size() - 2));
  CHECK(member_text(text, {"a", "b"}) == R"([1, {"c": "}\"]"}])");
  CHECK(member_text(text, {"a", "d"}) == "null");
  CHECK(member_text(text, {"stock"}) == "12"); // keys compare decoded
  CHECK(member_text(text, {"e"}) == R"("x\\")");
  CHECK(member_text(text, {"dup", "k"}) == "true"); // the last of a key written twice
  CHECK(member_text(text, {"a", "b", "c"}) == "<absent>"); // not through arrays
  CHECK(member_text(text, {"missing"}) == "<absent>");
  CHECK(member_text("[1]", {"a"}) == "<absent>");
  CHECK(member_text(R"({"\ud83d\ude00": 1})", {"\xF0\x9F\x98\x80"}) == "1");
  // Text cut short is never read past its end.
  for (std::size_t cut = 0; cut < text.size(); ++cut)
    (void)gather::find_member(std::string_view(text).substr(0, cut), {"dup", "k"});
}

TEST_CASE("shape: the template rendered with every JSON type at every depth", "[unit][answer][shape]") {
  const auto cfg = shape_config(R"({"book": {"isbn": "{meta.isbn}", "title": "{meta.title}", "stock": "{stock.stock}",
      "deep": {"n": 1.5, "t": true, "f": false, "z": null, "s": "a {meta} text", "l": ["{meta.tags}", "{extra}", 2]}},
      "related": "{related}", "meta": "{meta}", "absent": "{meta.nothing}", "nested": "{meta.obj.k}",
      "literal": ["{}", "{Not}", "{meta", "x{meta}"], "n": 0, "e": {}, "a": []})");
  const auto& route = cfg.routes[0];
  std::vector<section_outcome> outcomes{
      shape_ok(R"({"isbn": "978-7", "title": "T\"q", "stock": 3, "tags": ["a", 1, null], "obj": {"k": {"x": [true]}}})"),
      shape_ok(R"([{"isbn": "1", "title": "R"}])"), shape_ok(R"({"stock": 12})"), shape_ok(R"("s")")};
  auto reply = gather::build_aggregate_reply(route, outcomes, "rid");
  REQUIRE(reply.status == 200);
  const auto meta = json::parse(outcomes[0].data);
  const json want = {
      {"book", {{"isbn", "978-7"}, {"title", "T\"q"}, {"stock", 12},
                {"deep", {{"n", 1.5}, {"t", true}, {"f", false}, {"z", nullptr}, {"s", "a {meta} text"},
                          {"l", {{"a", 1, nullptr}, "s", 2}}}}}},
      {"related", {{{"isbn", "1"}, {"title", "R"}}}}, {"meta", meta}, {"absent", nullptr},
      {"nested", {{"x", {true}}}}, {"literal", {"{}", "{Not}", "{meta", "x{meta}"}}, {"n", 0},
      {"e", json::object()}, {"a", json::array()}, {"degraded", false}, {"warnings", json::array()}};
  CHECK(json::parse(reply.body) == want);
  // Members stand in the order the configuration writes them, degraded and warnings last.
  CHECK(reply.body.rfind(R"({"book":{"isbn":"978-7","title":"T\"q","stock":12,"deep":{"n":1.5,)", 0) == 0);
  CHECK(reply.body.find(R"("a":[],"degraded":false,"warnings":[]})") != std::string::npos);
}

TEST_CASE("shape: fallbacks in place, stable warning codes, the required failure unchanged", "[unit][answer][shape]") {
  const auto cfg = shape_config(R"({"book": {"isbn": "{meta.isbn}", "stock": "{stock.stock}"},
                                    "related": "{related}", "f": "{extra.f}"})");
  const auto& route = cfg.routes[0];
  // stock failed (its fallback is all of meta's data), related timed out at the deadline, extra
  // rejected: every one shows its fallback, and warnings carry the codes in route order.
  std::vector<section_outcome> outcomes{shape_ok(R"({"isbn": "978", "stock": 4})"),
                                        shape_failed(section_status::timeout),
                                        shape_failed(section_status::error),
                                        shape_failed(section_status::rejected)};
  auto reply = gather::build_aggregate_reply(route, outcomes, "rid");
  REQUIRE(reply.status == 200);
  CHECK(json::parse(reply.body) ==
        json{{"book", {{"isbn", "978"}, {"stock", 4}}}, {"related", json::array()}, {"f", {1, {{"g", nullptr}}}},
             {"degraded", true}, {"warnings", {"related_unavailable", "stock_unavailable", "extra_rejected"}}});
  CHECK(outcomes[2].source == gather::data_source::fallback); // the log line and metrics keep it

  std::vector<section_outcome> failing{shape_failed(section_status::timeout), shape_ok("[]"), shape_ok("{}"),
                                       shape_ok("1")};
  auto error = gather::build_aggregate_reply(route, failing, "rid");
  CHECK(error.status == 504);
  CHECK(json::parse(error.body)["error"] == "upstream_timeout");
}

TEST_CASE("shape: a progressive answer's last line carries the rendered template as data", "[unit][answer][shape]") {
  const auto cfg = shape_config(R"({"book": {"isbn": "{meta.isbn}", "stock": "{stock.stock}"}, "related": "{related}"})");
  const auto& route = cfg.routes[0];
  gather::progressive_answer stream(route, gather::answer_format::ndjson);
  std::vector<section_outcome> outcomes(4);
  outcomes[0] = shape_ok("{\"isbn\":\n\"978\", \"stock\": 4}");
  CHECK(stream.ended(0, outcomes).size() == 1);
  outcomes[1] = shape_ok(R"([{"isbn": "2"}])");
  outcomes[2] = shape_failed(section_status::timeout);
  outcomes[3] = shape_ok("{}");
  for (std::size_t i = 1; i < 4; ++i)
    CHECK(stream.ended(i, outcomes).size() == 1);
  const auto done = stream.done(outcomes, "rid");
  REQUIRE(std::count(done.begin(), done.end(), '\n') == 1);
  CHECK(json::parse(done) == json{{"done", true}, {"degraded", true}, {"warnings", {"stock_unavailable"}},
                                  {"request_id", "rid"},
                                  {"data", {{"book", {{"isbn", "978"}, {"stock", 4}}}, {"related", {{{"isbn", "2"}}}}}}});
}
