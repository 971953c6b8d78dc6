#include "support/gateway_fixture.hpp"

#include <filesystem>
#include <stdexcept>

namespace gather::test {

nlohmann::json section(const std::string& name, const std::string& url, int timeout_ms,
                            nlohmann::json extra) {
  nlohmann::json s = {{"name", name}, {"url", url}, {"timeout_ms", timeout_ms}};
  for (auto& [key, value] : extra.items())
    s[key] = value;
  return s;
}

nlohmann::json route_config_json(const std::string& path, nlohmann::json sections, int deadline_ms,
                                 nlohmann::json top) {
  nlohmann::json cfg = {{"listen", "127.0.0.1:0"}, {"max_inflight", 64},
                        {"routes", {{{"path", path}, {"deadline_ms", deadline_ms},
                                     {"sections", std::move(sections)}}}}};
  for (auto& [key, value] : top.items())
    cfg[key] = value;
  return cfg;
}

nlohmann::json batch_route_config_json(const std::string& path, nlohmann::json batch,
                                       nlohmann::json top) {
  nlohmann::json cfg = {{"listen", "127.0.0.1:0"}, {"max_inflight", 64},
                        {"routes", {{{"path", path}, {"batch", std::move(batch)}}}}};
  for (auto& [key, value] : top.items())
    cfg[key] = value;
  return cfg;
}

running_gateway::running_gateway(const nlohmann::json& config_json) {
  auto loaded = load_config(config_json.dump());
  if (!loaded.value) {
    std::string all;
    for (const auto& p : loaded.problems)
      all += p + "\n";
    throw std::runtime_error("test config invalid:\n" + all);
  }
  gateway_ = std::make_unique<gateway>(std::move(*loaded.value));
  port_ = gateway_->start();
}

running_gateway::~running_gateway() = default;

httplib::Client running_gateway::client() const {
  httplib::Client c{"127.0.0.1", port_};
  c.set_read_timeout(10, 0);
  c.set_connection_timeout(5, 0);
  return c;
}

httplib::Result running_gateway::get(const std::string& path, const httplib::Headers& headers) const {
  auto c = client();
  return c.Get(path.c_str(), headers);
}

httplib::Result running_gateway::post(const std::string& path, const std::string& body,
                                      const httplib::Headers& headers) const {
  auto c = client();
  return c.Post(path.c_str(), headers, body, "application/json");
}

int answered_ok(const running_gateway& gw, const std::string& prefix, int n) {
  int ok = 0;
  auto client = gw.client();
  for (int i = 0; i < n; ++i)
    if (auto res = client.Get(prefix + std::to_string(i)); res && res->status == 200)
      ++ok;
  return ok;
}

long long ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)
    .count();
}

int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

} // namespace gather::test
