#include "write_part.hpp"

#include <algorithm>

#include "gather/config/url_template.hpp"
#include "gather/downstream/call/downstream_request.hpp"

namespace gather {

namespace {

constexpr const char* idempotency_key = "idempotency-key";

} // namespace

std::optional<section_outcome> prepare_write(section_call& call, const section_config& write,
                                             const inbound_request& in) {
  auto& work = call.work;
  work.write = true;
  work.pass_errors = write.pass_errors;
  const auto left = std::chrono::duration_cast<millis>(call.deadline - std::chrono::steady_clock::now());
  work.timeout_ms = std::max<std::int64_t>(1, std::min<std::int64_t>(work.timeout_ms, left.count()));
  drop_header(work.header_lines, idempotency_key); // forwarded as the client sent it, once
  const auto key = in.header_value(idempotency_key);
  if (!key.empty() && std::none_of(key.begin(), key.end(), [](char c) { return c == '\r' || c == '\n' || c == '\0'; }))
    add_header(work.header_lines, "Idempotency-Key", key);
  if (write.grpc)
    return std::nullopt;
  work.method = write.method;
  if (write.body) {
    auto body = render_json_template(*write.body, write.body_placeholders, {},
                                     [&](const url_part& part) { return inbound_json_value(part, in); });
    if (!body) {
      section_outcome refused;
      refused.status = section_status::rejected;
      refused.not_made = not_made_reason::bad_body;
      refused.detail = "a value of the body cannot stand as text in the write's body template";
      return refused;
    }
    work.body = body->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    work.body = in.body_text; // byte for byte
  }
  drop_header(work.header_lines, "content-type"); // the body's own, never a forwarded one
  if (!work.body.empty())
    add_header(work.header_lines, "Content-Type", "application/json");
  return std::nullopt;
}

void keep_idempotency_key_from_reads(section_call& call, const section_config& section) {
  if (std::find(section.forward_headers.begin(), section.forward_headers.end(), idempotency_key) !=
      section.forward_headers.end())
    drop_header(call.work.header_lines, idempotency_key);
}

} // namespace gather
