#include "gather/demo.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace gather {

struct demo_downstreams::impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::atomic<unsigned> shop_calls{0};
  std::mutex mutex;
  std::condition_variable stopping_cv;
  bool stopping = false;

  /// Sleeps like a slow service, but lets shutdown end it at once.
  void slow(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock{mutex};
    stopping_cv.wait_for(lock, d, [this] { return stopping; });
  }

  static void json(httplib::Response& res, const nlohmann::json& body) {
    res.set_content(body.dump(), "application/json");
  }

  void routes() {
    server.Get(R"(/items/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
      const auto id = req.matches[1].str();
      json(res, {{"id", id}, {"title", "Demo product " + id}, {"stock", {{"available", 3}}},
                 {"shop_id", "s-7"}});
    });
    server.Get(R"(/price/([^/]+))", [](const httplib::Request&, httplib::Response& res) {
      json(res, {{"amount", 199.0}, {"currency", "CNY"}});
    });
    server.Get(R"(/stock/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
      if (req.matches[1].str().size() >= 4) { // items from 1000 on: the stock service has no record
        res.status = 404;
        return json(res, {{"error", "unknown item"}});
      }
      json(res, {{"available", 12}, {"warehouse", "SH-2"}});
    });
    server.Get(R"(/promo/([^/]+))", [](const httplib::Request&, httplib::Response& res) {
      json(res, {{"id", "spring-10"}, {"label", "10% off this week"}});
    });
    server.Get(R"(/reviews/([^/]+))", [this](const httplib::Request&, httplib::Response& res) {
      slow(std::chrono::milliseconds{400}); // past its 120 ms timeout: the hung service of article 001
      json(res, {{"score", 4.6}, {"count", 1289}});
    });
    server.Get(R"(/shops/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (shop_calls.fetch_add(1) % 3 == 0) { // flaky: every third call fails, a retry recovers
        res.status = 503;
        return json(res, {{"error", "try again"}});
      }
      json(res, {{"id", req.matches[1].str()}, {"name", "Demo Shop"}, {"rating", 4.8}});
    });
  }
};

demo_downstreams::demo_downstreams() : impl_(std::make_unique<impl>()) {
  impl_->routes();
  impl_->server.new_task_queue = [] { return new httplib::ThreadPool(64); };
  impl_->server.set_tcp_nodelay(true);
  impl_->port = impl_->server.bind_to_any_port("127.0.0.1");
  if (impl_->port <= 0)
    throw std::runtime_error("demo downstreams: cannot bind 127.0.0.1");
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  while (!impl_->server.is_running())
    std::this_thread::yield();
}

demo_downstreams::~demo_downstreams() {
  {
    std::lock_guard<std::mutex> guard{impl_->mutex};
    impl_->stopping = true;
  }
  impl_->stopping_cv.notify_all();
  impl_->server.stop();
  impl_->thread.join();
}

int demo_downstreams::port() const {
  return impl_->port;
}

std::string demo_downstreams::config_json(const std::string& listen) const {
  const auto base = "http://127.0.0.1:" + std::to_string(impl_->port);
  nlohmann::json sections = nlohmann::json::array({
    {{"name", "base"}, {"url", base + "/items/{id}"}, {"timeout_ms", 300}, {"required", true}},
    {{"name", "price"}, {"url", base + "/price/{id}"}, {"timeout_ms", 300},
     {"fallback", {{"amount", nullptr}, {"currency", "CNY"}}},
     {"retry", {{"attempts", 2}, {"backoff_ms", 20}}}},
    {{"name", "stock"}, {"url", base + "/stock/{id}"}, {"timeout_ms", 300},
     {"fallback_from", "base.stock"}},
    {{"name", "promo"}, {"url", base + "/promo/{id}"}, {"timeout_ms", 200},
     {"fallback", {{"id", nullptr}, {"label", ""}}}},
    {{"name", "reviews"}, {"url", base + "/reviews/{id}?tenant={header.x-tenant}"},
     {"timeout_ms", 120}, {"fallback", {{"score", 0}, {"count", 0}}},
     {"fields", {"score", "count"}}, {"forward_headers", {"x-tenant"}}},
    {{"name", "shop"}, {"url", base + "/shops/{base.shop_id}"}, {"timeout_ms", 200},
     {"fallback", {{"name", ""}}}, {"retry", {{"attempts", 2}, {"backoff_ms", 10}}}},
  });
  nlohmann::json cfg = {
    {"listen", listen},
    {"routes", {{{"path", "/products/{id}"}, {"deadline_ms", 800}, {"sections", sections}}}},
  };
  return cfg.dump(2);
}

} // namespace gather
