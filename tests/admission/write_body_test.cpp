// A write route's body as admission reads it (docs/api.md#write-routes): one JSON object, parsed
// once, hostile bodies refused with a reason fit for the client.
#include <catch2/catch.hpp>

#include "gather/admission/write_body.hpp"

using gather::is_json_media_type;
using gather::parse_write_body;

TEST_CASE("write body: an object is parsed once, with its types", "[unit][admission][write]") {
  const auto body = parse_write_body(R"({"sku": "b-1", "quantity": 2, "gift": {"note": "hi"}})");
  REQUIRE(body.problem.empty());
  REQUIRE(body.value);
  CHECK((*body.value)["quantity"] == 2);
  CHECK((*body.value)["gift"]["note"] == "hi");
}

TEST_CASE("write body: hostile bodies get a clear reason", "[unit][admission][write]") {
  CHECK(parse_write_body("[1, 2]").problem == "the body must be a JSON object, not an array");
  CHECK(parse_write_body("\"sku\"").problem == "the body must be a JSON object, not a string");
  CHECK(parse_write_body("42").problem == "the body must be a JSON object, not number");
  CHECK(parse_write_body(R"({"sku": "a", "sku": "b"})").problem ==
        "the body has the key \"sku\" twice in one object");
  CHECK(parse_write_body(R"({"a": {"k": 1, "k": 2}})").problem == "the body has the key \"k\" twice in one object");
  CHECK(parse_write_body(R"({"a": {"k": 1}, "b": {"k": 2}})").problem.empty()); // one key in each object
  CHECK(parse_write_body("{\"sku\": \"\xC3\x28\"}").problem.rfind("the body is not valid JSON", 0) == 0);
  CHECK(parse_write_body("{\"sku\": ").problem.rfind("the body is not valid JSON", 0) == 0);
  CHECK(parse_write_body("").problem.rfind("the body is not valid JSON", 0) == 0);
  const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  CHECK(parse_write_body(deep).problem == "the body is nested deeper than 512 levels");
  const std::string just = "{\"a\":" + std::string(510, '[') + std::string(510, ']') + "}";
  CHECK(parse_write_body(just).problem.empty());
}

TEST_CASE("write body: the media type is application/json, any case, with parameters",
          "[unit][admission][write]") {
  CHECK(is_json_media_type("application/json"));
  CHECK(is_json_media_type("Application/JSON; charset=utf-8"));
  CHECK(is_json_media_type(" application/json ;charset=utf-8"));
  CHECK_FALSE(is_json_media_type(""));
  CHECK_FALSE(is_json_media_type("text/plain"));
  CHECK_FALSE(is_json_media_type("application/json-patch+json"));
  CHECK_FALSE(is_json_media_type("application/x-www-form-urlencoded"));
}
