#include "gather/request_log.hpp"

#include <chrono>
#include <cstdio>
#include <mutex>

#include <nlohmann/json.hpp>

namespace gather {

namespace {

std::mutex log_mutex;

double unix_seconds() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count() / 1e6;
}

nlohmann::json base_record(const std::string& request_id, const std::string& route, int status,
                           std::int64_t ms) {
  return {{"ts", unix_seconds()}, {"request_id", request_id}, {"route", route},
          {"status", status},     {"ms", ms}};
}

void emit(const nlohmann::json& record) {
  // replace: downstream text (error strings, paths) may hold invalid UTF-8; the log must not throw.
  write_log_line(record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

} // namespace

void write_log_line(const std::string& json_line) {
  std::lock_guard<std::mutex> guard{log_mutex};
  std::fwrite(json_line.data(), 1, json_line.size(), stderr);
  std::fputc('\n', stderr);
}

void log_request(const inbound_request& in, const std::string& route, int status, std::int64_t ms,
                 const std::vector<section_config>& sections,
                 const std::vector<section_outcome>& outcomes) {
  auto record = base_record(in.request_id, route, status, ms);
  auto& parts = record["sections"] = nlohmann::json::object();
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const auto& o = outcomes[i];
    auto& part = parts[sections[i].name] = {{"status", to_string(o.status)},
                                            {"source", to_string(o.source)},
                                            {"attempts", o.attempts},
                                            {"ms", o.ms}};
    if (o.last_http != 0)
      part["http"] = o.last_http;
    if (!o.detail.empty())
      part["detail"] = o.detail;
  }
  emit(record);
}

void log_request(const std::string& request_id, const std::string& route, int status,
                 std::int64_t ms, const std::string& detail) {
  auto record = base_record(request_id, route, status, ms);
  if (!detail.empty())
    record["detail"] = detail;
  emit(record);
}

} // namespace gather
