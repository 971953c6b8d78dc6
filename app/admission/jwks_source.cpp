#include "gather/admission/jwks_source.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gather/downstream/call/downstream_client.hpp"
#include "gather/ops/request_log.hpp"
#include "gather/values/wall_clock.hpp"

namespace gather {

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void log_jwks(const std::string& origin, const char* result, const std::string& detail,
              std::size_t keys = 0) {
  nlohmann::ordered_json line{
      {"event", "jwks"},
      {"ts", unix_seconds()},
      {"source", origin},
      {"result", result}};
  if (keys)
    line["keys"] = keys;
  if (!detail.empty())
    line["detail"] = detail;
  write_log_line(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

/// The usable set in `text`, or null with the reason in `why`.
std::shared_ptr<const jwk_set> usable_set(const std::string& text, std::string& why) {
  auto parsed = parse_jwk_set(text);
  if (!parsed.value) {
    why = parsed.problem;
    return nullptr;
  }
  if (parsed.value->keys.empty()) {
    why = "no usable key";
    for (const auto& reason : parsed.invalid)
      why += "; " + reason;
    for (const auto& reason : parsed.skipped)
      why += "; " + reason;
    return nullptr;
  }
  return std::make_shared<const jwk_set>(std::move(*parsed.value));
}

} // namespace

jwks_source::jwks_source(const std::string& file) : origin_(file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string why = "cannot read the file";
  auto keys = in ? usable_set(text.str(), why) : nullptr;
  if (keys)
    install(std::move(keys));
  else
    log_jwks(origin_, "invalid", why);
}

jwks_source::jwks_source(std::string url, std::chrono::seconds refresh)
    : origin_(std::move(url)), url_(true), refresh_(refresh) {}

jwks_source::~jwks_source() = default;

void jwks_source::start(downstream_client& client) {
  downstream_client* none = nullptr;
  if (!url_ || !client_.compare_exchange_strong(none, &client))
    return;
  next_refresh_ns_.store(now_ns() + std::chrono::nanoseconds(refresh_).count());
  fetch();
}

void jwks_source::refresh_if_due() {
  auto due = next_refresh_ns_.load(std::memory_order_relaxed);
  const auto now = now_ns();
  if (now < due ||
      !next_refresh_ns_.compare_exchange_strong(due, now + std::chrono::nanoseconds(refresh_).count()))
    return;
  fetch();
}

std::shared_ptr<const jwk_set> jwks_source::keys() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return keys_;
}

void jwks_source::install(std::shared_ptr<const jwk_set> keys) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    keys_ = std::move(keys);
  }
  version_.fetch_add(1, std::memory_order_acq_rel);
}

void jwks_source::unknown_kid() {
  if (!client_.load())
    return;
  const auto now = now_ns();
  auto last = last_kid_fetch_ns_.load();
  const auto pace = std::chrono::nanoseconds(kid_refetch_pace).count();
  if (now - last < pace || !last_kid_fetch_ns_.compare_exchange_strong(last, now))
    return;
  fetch();
}

void jwks_source::fetch() {
  downstream_client* client = client_.load();
  if (!client || in_flight_.exchange(true))
    return;
  fetches_.fetch_add(1);
  transfer_request request;
  request.url = origin_;
  request.header_lines = "Accept: application/json\r\n";
  request.timeout = jwks_fetch_timeout;
  request.max_body_bytes = jwks_max_bytes;
  // The completion runs on a loop; the source outlives the client's transfers (the gateway's
  // registry is destroyed after the loops stopped and the client went).
  client->submit(std::move(request), [this](transfer_result&& result) {
    const bool ok = result.error == transfer_error::none && result.http_status == 200;
    std::string detail = result.detail;
    if (result.error == transfer_error::none && !ok)
      detail = "HTTP " + std::to_string(result.http_status);
    fetched(std::move(result.body), ok, detail);
  });
}

void jwks_source::fetched(std::string body, bool ok, const std::string& detail) {
  std::string why = detail.empty() ? "fetch failed" : detail;
  auto keys = ok ? usable_set(body, why) : nullptr;
  in_flight_.store(false);
  if (!keys) {
    log_jwks(origin_, version() ? "failed, keeping the last good set" : "failed, no set yet", why);
    return;
  }
  const auto count = keys->keys.size();
  install(std::move(keys));
  log_jwks(origin_, "ok", {}, count);
}

std::shared_ptr<jwks_source> jwks_registry::source_for(const std::string& file,
                                                       const std::string& url,
                                                       std::chrono::seconds refresh) {
  if (url.empty())
    return std::make_shared<jwks_source>(file);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& source : urls_)
    if (source->origin() == url && source->refresh() == refresh)
      return source;
  auto source = std::make_shared<jwks_source>(url, refresh);
  urls_.push_back(source);
  if (client_)
    source->start(*client_);
  return source;
}

void jwks_registry::start(downstream_client& client) {
  std::lock_guard<std::mutex> lock(mutex_);
  client_ = &client;
  for (const auto& source : urls_)
    source->start(client);
}

} // namespace gather
