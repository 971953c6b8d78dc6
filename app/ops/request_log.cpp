#include "gather/ops/request_log.hpp"
#include "gather/downstream/grpc/grpc_wire.hpp"

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "gather/answer/batch_response.hpp"
#include "gather/ops/json_line.hpp"
#include "gather/runtime/io_loops.hpp"
#include "gather/values/wall_clock.hpp"

namespace gather {

namespace {

std::mutex log_mutex;

nlohmann::json base_record(const std::string& request_id, const std::string& route, int status,
                           std::int64_t ms, const std::string& trace_id, const char* proto,
                           std::string_view client) {
  nlohmann::json record = {{"ts", unix_seconds()}, {"request_id", request_id}, {"route", route},
                           {"status", status},     {"ms", ms}};
  if (!trace_id.empty())
    record["trace_id"] = trace_id;
  if (proto)
    record["proto"] = proto;
  if (!client.empty())
    record["client"] = client;
  return record;
}

/// The fields every request's line starts with, written directly (the hot path: one line per
/// request). `more`: about the bytes the caller adds after them.
json_line start_line(const std::string& request_id, const std::string& route, int status,
                     std::int64_t ms, const std::string& trace_id, const char* proto,
                     std::string_view client, std::size_t more) {
  json_line line{128 + request_id.size() + trace_id.size() + route.size() + client.size() + more};
  line.unix_time("ts", unix_micros()).field("request_id", request_id);
  if (!trace_id.empty())
    line.field("trace_id", trace_id);
  line.field("route", route);
  if (proto)
    line.field("proto", proto);
  if (!client.empty())
    line.field("client", client);
  line.field("status", status).field("ms", ms);
  return line;
}

void emit(const nlohmann::json& record) {
  // replace: downstream text (error strings, paths) may hold invalid UTF-8; the log must not throw.
  write_log_line(record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

} // namespace

namespace {

/// A loop thread's lines not yet written: flushed once per turn of the loop (a handler posted when
/// the first line arrives runs after the handlers already queued), when they reach
/// log_batch_bytes, and when the thread ends. Under load one write() carries many requests' lines
/// instead of one each; at rest a line leaves as soon as its turn ends.
struct pending_lines {
  std::string text;
  ~pending_lines() { flush(); }
  void flush() {
    if (text.empty())
      return;
    {
      std::lock_guard<std::mutex> guard{log_mutex};
      std::fwrite(text.data(), 1, text.size(), stderr); // stderr is unbuffered: one write()
    }
    text.clear();
  }
};

/// Bounds one write() and the lines a crash could lose; far above a turn's worth of lines at rest.
constexpr std::size_t log_batch_bytes = 64 * 1024;

thread_local pending_lines pending;

} // namespace

void write_log_line(std::string json_line) {
  json_line.push_back('\n');
  auto* loop = this_thread_loop();
  if (!loop) { // not a loop's thread: at once, the line and its newline in one write()
    std::lock_guard<std::mutex> guard{log_mutex};
    std::fwrite(json_line.data(), 1, json_line.size(), stderr);
    return;
  }
  const bool first = pending.text.empty();
  if (first && pending.text.capacity() == 0)
    pending.text.reserve(log_batch_bytes);
  pending.text += json_line;
  if (pending.text.size() >= log_batch_bytes)
    pending.flush(); // the posted flush, if any, then finds nothing to write
  else if (first)
    boost::asio::post(*loop, [] { pending.flush(); });
}

void log_request(const std::string& request_id, const std::string& trace_id, const std::string& route,
                 int status, std::int64_t ms, const std::vector<section_config>& sections,
                 const std::vector<section_outcome>& outcomes, const char* proto,
                 std::string_view client) {
  // A section's line with its fixed words is under 128 bytes (its name, detail and node aside).
  std::size_t more = 16;
  for (std::size_t i = 0; i < sections.size(); ++i)
    more += 128 + sections[i].name.size() + outcomes[i].detail.size() + outcomes[i].node.size();
  json_line line = start_line(request_id, route, status, ms, trace_id, proto, client, more);
  line.open("sections");
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const auto& o = outcomes[i];
    line.open(json_key{sections[i].name})
      .plain_field("status", to_string(o.status))
      .plain_field("source", to_string(o.source))
      .field("attempts", o.attempts)
      .field("ms", o.ms);
    if (o.last_http != 0)
      line.field("http", o.last_http);
    if (o.grpc_code >= 0)
      line.field("grpc", grpc::code_name(o.grpc_code));
    if (!o.detail.empty())
      line.field("detail", o.detail);
    if (!o.node.empty())
      line.field("node", o.node);
    if (!o.endpoint.empty())
      line.field("endpoint", o.endpoint);
    if (o.hedges > 0)
      line.field("hedges", o.hedges);
    if (o.not_made != not_made_reason::none)
      line.plain_field("not_made", to_string(o.not_made));
    if (sections[i].write)
      line.field("write", true);
    line.close();
  }
  line.close();
  write_log_line(std::move(line).done());
}

void log_batch_request(const std::string& request_id, const std::string& trace_id,
                       const std::string& route, int status, std::int64_t ms, const batch_plan& plan,
                       const std::vector<section_outcome>& calls, const char* proto,
                       std::string_view client) {
  auto record = base_record(request_id, route, status, ms, trace_id, proto, client);
  const auto counts = count_rows(plan, calls);
  std::int64_t attempts = 0;
  std::size_t not_started = 0;
  for (const auto& call : calls) {
    attempts += call.attempts;
    not_started += call.attempts == 0 ? 1 : 0;
  }
  record["items"] = plan.rows.size();
  record["calls"] = calls.size();
  record["attempts"] = attempts;
  record["not_started"] = not_started; // calls the deadline cut off before their first attempt
  record["counts"] = {{"ok", counts.ok},
                      {"timeout", counts.timeout},
                      {"error", counts.error},
                      {"rejected", counts.rejected}};
  std::vector<std::size_t> first_row(calls.size(), plan.rows.size());
  for (std::size_t row = plan.rows.size(); row-- > 0;)
    first_row[plan.call_of_row[row]] = row;
  // One entry per kind of failure, not per call: a batch of 1000 timeouts is one line, not 1000.
  std::map<std::pair<std::string, int>, nlohmann::json> failures;
  for (std::size_t c = 0; c < calls.size(); ++c) {
    const auto& call = calls[c];
    if (call.status == section_status::ok)
      continue;
    auto [it, fresh] = failures.try_emplace({to_string(call.status), call.last_http});
    if (fresh)
      it->second = {{"status", to_string(call.status)},
                    {"http", call.last_http},
                    {"calls", 0},
                    {"first_item", nlohmann::json::parse(plan.rows[first_row[c]])},
                    {"detail", call.detail}};
    it->second["calls"] = it->second["calls"].get<int>() + 1;
  }
  auto& summary = record["failures"] = nlohmann::json::array();
  for (auto& [kind, entry] : failures)
    summary.push_back(std::move(entry));
  emit(record);
}

void log_request(const std::string& request_id, const std::string& route, int status,
                 std::int64_t ms, const std::string& detail, const std::string& trace_id,
                 const char* proto, std::string_view client) {
  json_line line = start_line(request_id, route, status, ms, trace_id, proto, client, detail.size() + 12);
  if (!detail.empty())
    line.field("detail", detail);
  write_log_line(std::move(line).done());
}

} // namespace gather
