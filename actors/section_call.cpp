// A section's call resolved for one request (section_call), and each of its calls' one
// description for the call face (call_request_of: a call_description, its deadline header written
// on the stack).
#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>

#include "gather/downstream/call/downstream_request.hpp"
#include "gather/actors/section_cache.hpp"
#include "gather/actors/section_worker.hpp"
#include "gather/resilience/section_guards.hpp"
#include "gather/actors/serving_config.hpp"

namespace gather {

namespace {

/// What a deadline line holds besides its name: ": " and at most 20 digits.
constexpr std::size_t deadline_line_extra = 24;

/// "Name: N" written at `out`, which has room for the name and deadline_line_extra; its length.
std::size_t write_deadline_line(char* out, const std::string& name, millis call_timeout,
                                std::chrono::nanoseconds left) {
  const auto left_ms = std::chrono::duration_cast<millis>(left);
  const auto ms = std::max<std::int64_t>(1, std::min(call_timeout, left_ms).count());
  char* at = std::copy(name.begin(), name.end(), out);
  *at++ = ':';
  *at++ = ' ';
  at = std::to_chars(at, out + name.size() + deadline_line_extra, ms).ptr;
  return static_cast<std::size_t>(at - out);
}

} // namespace

std::unique_ptr<section_call> make_section_call(const section_config& section, std::size_t route,
                                                std::size_t index, std::string url, std::string header_lines,
                                                const inbound_request& in, steady_time deadline,
                                                std::shared_ptr<request_progress> progress,
                                                const serving_config& serving) {
  auto made = std::make_unique<section_call>();
  auto& call = *made;
  auto& work = call.work;
  work.url = std::move(url);
  work.header_lines = std::move(header_lines);
  work.deadline_header = serving.deadline_header();
  work.timeout_ms = section.timeout.count();
  work.attempts = section.retry.attempts;
  work.backoff_ms = section.retry.backoff.count();
  work.multiplier = section.retry.multiplier;
  work.fields = section.fields;
  work.max_items = section.max_items;
  work.max_response_bytes = serving.max_response_bytes();
  work.http2 = section.http2;
  work.budget_ms = std::chrono::duration_cast<millis>(deadline - std::chrono::steady_clock::now()).count();
  call.route = route;
  call.index = index;
  call.name = section.name;
  if (in.trace.started()) // the traceparent line downstream_header_lines wrote
    call.trace = traceparent{in.trace.trace_id, in.trace.span_id, in.trace.sampled};
  call.deadline = deadline;
  call.progress = std::move(progress);
  call.store_time = in.store_time;
  call.guard = &serving.guards.section(route, index);
  call.upstream = serving.section_upstream(route, index);
  call.origin = serving.section_origin(route, index);
  if (section.cache_ttl.count() > 0) {
    // Keyed by the forwarded headers' values too (the claim headers of a route with auth among
    // them): two tenants, or two users, never see each other's data. Claims in the URL are in it.
    std::vector<std::string> forwarded;
    for (const auto& name : forwarded_names(section.forward_headers, in))
      for (auto [it, end] = in.headers.equal_range(name); it != end; ++it)
        forwarded.push_back(name + ": " + it->second);
    call.cache_key = cache_key(serving.cache_scopes[route][index], work.url, forwarded);
    call.cache_ttl = section.cache_ttl;
    call.stale_ttl = section.stale_ttl;
    call.cache_shared = section.cache_shared && serving.store;
  }
  return made;
}

call_description call_request_of(const section_call& call, millis left, steady_time now) {
  call_description request;
  const auto& work = call.work;
  request.url = work.url;
  request.timeout = left;
  request.left = std::chrono::duration_cast<millis>(call.deadline - now);
  request.max_response_bytes = work.max_response_bytes;
  request.fields = work.fields;
  request.max_items = work.max_items;
  request.http2 = work.http2;
  request.grpc = call.grpc;
  request.upstream = call.upstream;
  request.origin = call.origin;
  if (call.grpc) // what metadata_of leaves out; an HTTP call's line is in its header block
    request.deadline_header = work.deadline_header;
  if (work.write) { // a route's write (docs/api.md#write-routes)
    request.write = true;
    request.pass_errors = work.pass_errors;
    if (!work.method.empty())
      request.method = work.method;
    request.body = work.body;
  }
  static const std::string none; // gRPC says it in grpc-timeout
  request.header_lines = call_header_lines(work.header_lines, call.grpc ? none : work.deadline_header, left,
                                           call.deadline - now);
  return request;
}

std::string call_header_lines(std::string_view lines, const std::string& deadline_header,
                              millis call_timeout, std::chrono::nanoseconds left) {
  // The deadline line is written on the stack (a header name is short; a longer one spills to
  // the heap): every call's line was a string allocated only to be copied into the block.
  std::string_view deadline_line;
  std::array<char, 128> on_stack;
  std::string spilled;
  if (!deadline_header.empty()) {
    char* out = on_stack.data();
    if (deadline_header.size() + deadline_line_extra > on_stack.size()) {
      spilled.resize(deadline_header.size() + deadline_line_extra);
      out = spilled.data();
    }
    deadline_line = {out, write_deadline_line(out, deadline_header, call_timeout, left)};
  }
  return header_block(lines, deadline_line);
}

} // namespace gather
