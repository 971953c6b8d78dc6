#include "gather/downstream/pool/name_lookups.hpp"

#include <cerrno>
#include <cstring>
#include <condition_variable>
#include <thread>

#include <netdb.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

namespace gather {

namespace {

namespace asio = boost::asio;
using error_code = boost::system::error_code;

/// getaddrinfo's failure as Asio's resolver reports it.
error_code lookup_error(int rc) {
  switch (rc) {
  case EAI_NONAME:
#ifdef EAI_NODATA
  case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
  case EAI_ADDRFAMILY:
#endif
    return asio::error::host_not_found;
  case EAI_AGAIN: return asio::error::host_not_found_try_again;
  case EAI_SERVICE: return asio::error::service_not_found;
  case EAI_MEMORY: return asio::error::no_memory;
  case EAI_SYSTEM: return error_code(errno, boost::system::system_category());
  default: return asio::error::no_recovery;
  }
}

std::pair<error_code, name_lookups::endpoints> lookup(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG; // as Asio's resolver by default
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0)
    return {lookup_error(rc), {}};
  name_lookups::endpoints out;
  for (auto* a = found; a; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6)
      continue;
    asio::ip::tcp::endpoint endpoint;
    std::memcpy(endpoint.data(), a->ai_addr, a->ai_addrlen);
    out.push_back(endpoint);
  }
  ::freeaddrinfo(found);
  if (out.empty())
    return {asio::error::host_not_found, {}};
  return {error_code{}, std::move(out)};
}

} // namespace

/// One host:port: its thread and the lookups waiting for its next answer.
struct name_lookups::name {
  struct waiter {
    asio::io_context* loop;
    completion done;
  };

  name(std::string host, std::string port) : host(std::move(host)), port(std::move(port)) {
    thread = std::thread([this] { run(); });
  }
  ~name() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_one();
    thread.join();
  }

  void add(asio::io_context& loop, completion done) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      waiting.push_back({&loop, std::move(done)});
    }
    wake.notify_one();
  }

  /// One lookup for everyone waiting when it starts and everyone who comes while it runs.
  void run() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [this] { return stopping || !waiting.empty(); });
        if (stopping)
          return;
      }
      auto [ec, found] = lookup(host, port);
      std::vector<waiter> answered;
      {
        std::lock_guard<std::mutex> lock(mutex);
        answered.swap(waiting);
      }
      for (auto& w : answered)
        asio::post(*w.loop, [done = std::move(w.done), ec = ec, found]() mutable { done(ec, std::move(found)); });
    }
  }

  const std::string host, port;
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<waiter> waiting;
  bool stopping = false;
  std::thread thread;
};

name_lookups::name_lookups() = default;

name_lookups::~name_lookups() = default;

void name_lookups::resolve(const std::string& host, const std::string& port, asio::io_context& loop,
                           completion done) {
  name* n;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = names_[host + ":" + port];
    if (!slot)
      slot = std::make_unique<name>(host, port);
    n = slot.get();
  }
  n->add(loop, std::move(done));
}

std::size_t name_lookups::threads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return names_.size();
}

} // namespace gather
