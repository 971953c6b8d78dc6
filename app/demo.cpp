#include "gather/demo.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "demo/book_service.hpp"
#include "demo/cart.hpp"

namespace gather {

namespace stream_embedded {
// Defined in the generated stream_page.cpp (app/demo/stream/ inlined by cmake/embed_dashboard.cmake).
extern const unsigned char page[];
extern const std::size_t page_size;
} // namespace stream_embedded

namespace {

/// A loopback port that refuses every connection for as long as the demo runs: a socket bound to
/// it but never listening answers each SYN with a reset. (A port merely believed free could be
/// taken by anything meanwhile.) This is the "down" downstream.
int bind_refusing_port(int& fd) {
  fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    throw std::runtime_error("demo downstreams: socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("demo downstreams: cannot bind a refusing port on 127.0.0.1");
  return ntohs(addr.sin_port);
}

/// A directory of its own under $TMPDIR (else /tmp) holding linkd/v3/library.proto and
/// shop/v1/cart.proto, the .proto files the demo's gRPC calls are compiled from; removed when the
/// demo stops.
std::filesystem::path write_proto() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/gather-demo-XXXXXX";
  if (!::mkdtemp(dir.data()))
    throw std::runtime_error("demo downstreams: cannot make a directory under " + dir);
  std::filesystem::create_directories(std::filesystem::path(dir) / "linkd/v3");
  std::ofstream out{std::filesystem::path(dir) / "linkd/v3/library.proto"};
  out << demo_book_service::proto_text();
  std::filesystem::create_directories(std::filesystem::path(dir) / "shop/v1");
  std::ofstream cart{std::filesystem::path(dir) / "shop/v1/cart.proto"};
  cart << demo_cart::proto_text();
  if (!out.flush() || !cart.flush())
    throw std::runtime_error("demo downstreams: cannot write the gRPC services' .proto files in " + dir);
  return dir;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

} // namespace

struct demo_downstreams::impl {
  demo_book_service library;  // the gRPC downstream (the cart's writes and reads stay on it)
  /// A second instance: the book page's calls spread over both (upstream "library"); stopped by
  /// POST /demo/library2/stop, to watch the gateway eject it.
  std::unique_ptr<demo_book_service> library2 = std::make_unique<demo_book_service>();
  std::mutex library2_mutex;
  std::filesystem::path protos = write_proto();
  httplib::Server server;
  std::thread thread;
  int port = 0;
  int down_fd = -1;
  int down_port = 0;
  std::atomic<unsigned> shop_calls{0};
  std::mutex mutex;
  std::condition_variable stopping_cv;
  bool stopping = false;

  ~impl() {
    if (down_fd >= 0)
      ::close(down_fd);
    std::error_code ignored;
    std::filesystem::remove_all(protos, ignored);
  }

  /// Sleeps like a slow service, but lets shutdown end it at once.
  void slow(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock{mutex};
    stopping_cv.wait_for(lock, d, [this] { return stopping; });
  }

  static void json(httplib::Response& res, const nlohmann::json& body, int status = 200) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
  }

  void routes() {
    // The progressive page (app/demo/stream/): it reads the gateway's product route with an
    // EventSource, across origins, which the demo's `cors` allows.
    server.Get("/demo/stream", [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Content-Security-Policy",
                     "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                     "connect-src http://127.0.0.1:* http://localhost:*; base-uri 'none'; form-action 'none'");
      res.set_content(std::string(reinterpret_cast<const char*>(stream_embedded::page), stream_embedded::page_size),
                      "text/html; charset=utf-8");
    });
    server.Get(R"(/items/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
      const auto id = req.matches[1].str();
      if (!all_digits(id)) // the catalogue knows numbers only: /products/abc is a missing product
        return json(res, {{"error", "no such item"}}, 404);
      json(res, {{"id", id}, {"title", "Demo product " + id}, {"stock", {{"available", 3}}},
                 {"shop_id", "s-" + id.substr(id.size() - 1)}});
    });
    server.Get(R"(/price/([^/]+))", [](const httplib::Request&, httplib::Response& res) {
      json(res, {{"amount", 199.0}, {"currency", "CNY"}});
    });
    server.Get(R"(/stock/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
      if (req.matches[1].str().size() >= 4) // items from 1000 on: the stock service has no record
        return json(res, {{"error", "unknown item"}}, 404);
      json(res, {{"available", 12}, {"warehouse", "SH-2"}});
    });
    // Promotions differ per tenant (the X-Tenant header, forwarded): the gateway caches them per
    // tenant, since the forwarded header's value is part of the cache key.
    server.Get(R"(/promo/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
      const auto tenant = req.get_header_value("X-Tenant");
      if (tenant.empty())
        return json(res, {{"id", "spring-10"}, {"label", "10% off this week"}});
      json(res, {{"id", tenant + "-vip"}, {"label", "15% off for " + tenant + " members"}});
    });
    server.Get(R"(/reviews/([^/]+))", [this](const httplib::Request&, httplib::Response& res) {
      slow(std::chrono::milliseconds{400}); // past its 120 ms timeout: a hung service
      json(res, {{"score", 4.6}, {"count", 1289}});
    });
    server.Get(R"(/shops/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (shop_calls.fetch_add(1) % 3 == 0) // flaky: every third call fails, a retry recovers
        return json(res, {{"error", "try again"}}, 503);
      json(res, {{"id", req.matches[1].str()}, {"name", "Demo Shop " + req.matches[1].str()}, {"rating", 4.8}});
    });
    // The book page's stock over HTTP: books whose isbn ends in 6 have no live stock (503), so
    // the page falls back to the gRPC GetBook's snapshot.
    server.Get(R"(/books/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
      const auto isbn = req.matches[1].str();
      if (isbn.back() == '6')
        return json(res, {{"error", "stock service unavailable"}}, 503);
      json(res, {{"stock", 7}});
    });
    // The batch route's orders: "slow-..." take 250 ms, "stuck-..." never answer in time.
    server.Post("/demo/library2/stop", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock{library2_mutex};
      library2.reset(); // its port refuses connections from now on
      res.status = 204;
    });
    server.Get(R"(/orders/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      const auto order = req.matches[1].str();
      if (order.rfind("slow", 0) == 0)
        slow(std::chrono::milliseconds{250});
      if (order.rfind("stuck", 0) == 0)
        slow(std::chrono::milliseconds{3000}); // past its 400 ms timeout, twice
      json(res, {{"order", order}, {"state", "shipped"}});
    });
  }
};

demo_downstreams::demo_downstreams() : impl_(std::make_unique<impl>()) {
  impl_->down_port = bind_refusing_port(impl_->down_fd);
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
  const auto down = "http://127.0.0.1:" + std::to_string(impl_->down_port);
  nlohmann::ordered_json product = nlohmann::ordered_json::array({
    {{"name", "base"}, {"url", base + "/items/{id}"}, {"timeout_ms", 300}, {"required", true}},
    {{"name", "price"}, {"url", base + "/price/{id}"}, {"timeout_ms", 300},
     {"fallback", {{"amount", nullptr}, {"currency", "CNY"}}},
     {"retry", {{"attempts", 2}, {"backoff_ms", 20}}}},
    {{"name", "stock"}, {"url", base + "/stock/{id}"}, {"timeout_ms", 300},
     {"fallback_from", "base.stock"}},
    {{"name", "promo"}, {"url", base + "/promo/{id}"}, {"timeout_ms", 200},
     {"fallback", {{"id", nullptr}, {"label", ""}}}, {"cache_ttl_ms", 30000},
     {"forward_headers", {"x-tenant"}}},
    {{"name", "reviews"}, {"url", base + "/reviews/{id}?tenant={header.x-tenant}"},
     {"timeout_ms", 120}, {"fallback", {{"score", 0}, {"count", 0}}},
     {"fields", {"score", "count"}}, {"forward_headers", {"x-tenant"}}},
    {{"name", "shop"}, {"url", base + "/shops/{base.shop_id}"}, {"timeout_ms", 200},
     {"fallback", {{"name", ""}}}, {"retry", {{"attempts", 2}, {"backoff_ms", 10}}}},
  });
  // The same page as the client's own object (docs/config.md#shape): no envelope, a stable code
  // for the slow reviews. (ordered_json throughout: the shape's members answer in the order
  // written here.)
  nlohmann::ordered_json page_sections = product;
  page_sections[4]["warning"] = "reviews_unavailable";
  nlohmann::ordered_json page_shape = {
    {"product", {{"id", "{base.id}"}, {"title", "{base.title}"}, {"price", "{price.amount}"},
                 {"currency", "{price.currency}"}, {"in_stock", "{stock.available}"}}},
    {"promo", "{promo.label}"}, {"shop", "{shop.name}"}, {"reviews", "{reviews}"}};
  nlohmann::ordered_json delivery = nlohmann::ordered_json::array({
    {{"name", "base"}, {"url", base + "/items/{id}"}, {"timeout_ms", 300}, {"required", true}},
    {{"name", "carrier"}, {"url", down + "/carriers/{id}"}, {"timeout_ms", 300}, {"required", true},
     {"retry", {{"attempts", 2}, {"backoff_ms", 20}}}},
  });
  // The seed's book page: meta (gRPC, required), related (a gRPC stream taken to 5), stock over
  // HTTP falling back to meta's snapshot. Hop 300 ms, page 800 ms. Answered as the seed's own
  // DTO (BookDetail: book, related, degraded, warnings with stable codes); each section's status
  // is one Accept away (a progressive answer's lines).
  const auto library = "http://127.0.0.1:" + std::to_string(impl_->library.port());
  // The book service runs as two instances behind the upstream "library" (docs/upstreams.md): each
  // GetBook and SearchBooks call picks one, in turn.
  const nlohmann::ordered_json upstreams = {
    {"library", {{"balance", "round_robin"},
                 {"endpoints", {"127.0.0.1:" + std::to_string(impl_->library.port()),
                                "127.0.0.1:" + std::to_string(impl_->library2->port())}}}}};
  const nlohmann::ordered_json card = {"isbn", "title", "author", "stock"};
  nlohmann::ordered_json book = nlohmann::ordered_json::array({
    {{"name", "meta"}, {"required", true}, {"timeout_ms", 300}, {"fields", card},
     {"grpc", {{"target", "http://library"}, {"method", "linkd.v3.Library/GetBook"}, {"message", {{"isbn", "{isbn}"}}}}}},
    {{"name", "related"}, {"timeout_ms", 300}, {"fallback", nlohmann::ordered_json::array()}, {"fields", card},
     {"warning", "related_unavailable"},
     {"grpc", {{"target", "http://library"}, {"method", "linkd.v3.Library/SearchBooks"},
               {"message", {{"query", "{isbn}"}, {"page_size", 5}}}, {"max_messages", 5}}}},
    {{"name", "stock"}, {"url", base + "/books/{isbn}"}, {"timeout_ms", 300}, {"fallback_from", "meta"},
     {"warning", "stock_unavailable"}},
  });
  const nlohmann::ordered_json book_shape = {
    {"book", {{"isbn", "{meta.isbn}"}, {"title", "{meta.title}"}, {"author", "{meta.author}"},
              {"stock", "{stock.stock}"}}},
    {"related", "{related}"}};
  // The book page's "add to cart": a write route. AddItem (gRPC, the body's isbn and quantity in
  // its message, its refusals passed on) runs first and alone; then the cart is read back.
  const auto cart_call = [&](const char* method, nlohmann::ordered_json message) {
    return nlohmann::ordered_json{{"target", library}, {"method", std::string("shop.v1.Cart/") + method},
                                  {"message", std::move(message)}};
  };
  nlohmann::ordered_json add_to_cart = {
    {"name", "add"}, {"timeout_ms", 300}, {"pass_errors", true},
    {"grpc", cart_call("AddItem", {{"cart_id", "{cart}"}, {"sku", "{body.isbn}"}, {"quantity", "{body.quantity}"}})}};
  nlohmann::ordered_json cart_reads = nlohmann::ordered_json::array({
    {{"name", "cart"}, {"required", true}, {"timeout_ms", 300}, {"grpc", cart_call("GetCart", {{"cart_id", "{cart}"}})}},
  });
  nlohmann::ordered_json orders = {{"url", base + "/orders/{item}"}, {"max_items", 100}, {"concurrency", 8},
                           {"timeout_ms", 400}, {"retry", {{"attempts", 2}, {"backoff_ms", 50}}},
                           {"deadline_ms", 2000}};
  nlohmann::ordered_json cfg = {
    {"listen", listen},
    // The progressive page is served from the downstreams' origin: a browser client on another origin.
    {"cors", {{"allow_origins", {"http://127.0.0.1:" + std::to_string(impl_->port)}}, {"expose_headers", {"x-request-id"}}}},
    {"compression", {{"min_bytes", 1024}, {"encodings", {"br", "gzip"}}}},
    {"protos", {{"files", {"linkd/v3/library.proto", "shop/v1/cart.proto"}}, {"import_paths", {impl_->protos.string()}}}},
    {"upstreams", upstreams},
    {"routes",
     {{{"path", "/products/{id}"}, {"deadline_ms", 800}, {"sections", product}},
      {{"path", "/pages/{id}"}, {"deadline_ms", 800}, {"sections", page_sections}, {"shape", page_shape}},
      {{"path", "/delivery/{id}"}, {"deadline_ms", 800}, {"sections", delivery}},
      {{"path", "/books/{isbn}"}, {"deadline_ms", 800}, {"sections", book}, {"shape", book_shape}},
      {{"path", "/carts/{cart}/items"}, {"method", "POST"}, {"deadline_ms", 800}, {"write", add_to_cart},
       {"sections", cart_reads}},
      {{"path", "/orders/status"}, {"batch", orders}}}},
  };
  return cfg.dump(2);
}

std::string demo_downstreams::banner() const {
  // Every curl line below is run as printed, and what its comment claims is checked, by
  // tests/app/demo_test.cpp; the progressive page is loaded by headless Chromium there too.
  std::string text = R"(
Gather demo: six routes on simulated downstreams (reviews is slow, shop is flaky, carrier is down; books and the cart call gRPC).
Try:
  curl -s {base}/products/42            # degraded: reviews times out (its fallback shows); flaky shop is retried
  curl -N -H 'Accept: application/x-ndjson' {base}/products/42   # progressive: a line per section as it ends, the slow reviews at its timeout
  curl -s {base}/products/17            # dependent: shop's URL uses base's shop_id (s-7)
  curl -s {base}/products/1234          # stock answers 404: its data comes from base.stock
  curl -s {base}/pages/42               # the same page shaped as the client's own object: no envelope, warnings ["reviews_unavailable"]
  curl -s -H 'X-Tenant: acme' {base}/products/42     # run twice: promo's source turns live -> cache
  curl -s -H 'X-Tenant: globex' {base}/products/42   # another tenant: its own promo, its own cache entry
  curl -s -H 'Content-Type: application/json' -d '{"items": ["o1", "slow-2", "stuck-3", 4]}' {base}/orders/status   # batch: a status per item, stuck-3 times out
  curl -si -H 'Content-Type: application/json' -d '{"items": [true]}' {base}/orders/status   # 400 bad_request with a message
  curl -si {base}/products/abc          # base (required) answers 404: the page is 404 not_found
  curl -si {base}/delivery/42           # carrier (required) is down: 503 upstream_unavailable
  curl -s {base}/books/978-7-111-12345-7   # book page as the seed's BookDetail: meta over gRPC, related a gRPC stream of 10 cut at 5, stock over HTTP
  curl -s {base}/books/978-7-111-12345-6   # stock's HTTP service fails: book.stock is meta's snapshot, degraded, warnings ["stock_unavailable"]
  curl -N -H 'Accept: application/x-ndjson' {base}/books/978-7-111-12345-6   # the same page with each section's status: a line per section, the page last
  curl -si {base}/books/0-00             # GetBook (required) answers NOT_FOUND: the page is 404 not_found
  curl -s {base}/books/978-7-111-12345-9   # SearchBooks hangs: related is cancelled at its 300 ms, degraded to [], warnings ["related_unavailable"]
  curl -s -H 'Content-Type: application/json' -d '{"isbn": "978-7-111-12345-7", "quantity": 1}' {base}/carts/c1/items   # add to cart: AddItem (a gRPC write) first and alone, then the cart read back
  curl -si -H 'Content-Type: application/json' -d '{"isbn": "978-7-111-12345-7", "quantity": 5}' {base}/carts/c1/items   # 409 rejected: out of stock, the cart service's message as "detail"
  curl -si -H 'Content-Type: application/json' -d '{"isbn": "978-7-111-12345-7", "quantity": "two"}' {base}/carts/c1/items   # 400 bad_request: the body does not fit AddItem's message (body.quantity), no call made
  curl -s {base}/debug/upstreams       # the book service's two instances behind the upstream "library": the book calls above went to each in turn
  curl -s -d '' {page}/demo/library2/stop   # stop the second instance: its calls fail, 5 in a row eject it ("ejected" in /debug/upstreams), then every book call goes to the first
  curl -s {base}/healthz
  curl -s {base}/metrics                # Prometheus text: every counter and histogram
Dashboard: {base}/dashboard (open it in a browser)
Progressive page: {page}/demo/stream?gateway={base} (the product page drawn part by part)
Stop with Ctrl-C.
)";
  const std::string page = "http://127.0.0.1:" + std::to_string(impl_->port);
  for (auto at = text.find("{page}"); at != std::string::npos; at = text.find("{page}"))
    text.replace(at, 6, page);
  return text;
}

} // namespace gather
