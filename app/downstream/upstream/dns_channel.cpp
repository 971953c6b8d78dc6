#include "upstream/dns_channel.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <unordered_map>

#include <arpa/inet.h>
#include <ares.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

namespace gather {

namespace {

/// Reads a socket c-ares left readable again before the loop's next epoll_wait: Asio's epoll is
/// edge-triggered and c-ares may leave bytes behind (one TCP read per call); a bound keeps one
/// flooding server from holding the loop.
constexpr int max_reads_per_wakeup = 64;

void library_init() {
  static std::once_flag once;
  std::call_once(once, [] { ares_library_init(ARES_LIB_INIT_ALL); });
}

dns_status status_of(int status) {
  switch (status) {
  case ARES_SUCCESS: return dns_status::found;
  case ARES_ENOTFOUND:
  case ARES_ENODATA:
  case ARES_ENONAME: return dns_status::nothing;
  default: return dns_status::failed;
  }
}

bool readable_now(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0;
}

} // namespace

struct dns_channel::core : std::enable_shared_from_this<core> {
  /// A socket c-ares opened, in the loop's epoll for as long as c-ares keeps it.
  struct watched {
    boost::asio::posix::stream_descriptor descriptor;
    std::uint64_t serial;
    bool want_read = false, want_write = false;
    bool read_armed = false, write_armed = false;
    watched(boost::asio::io_context& loop, int fd, std::uint64_t n) : descriptor(loop, fd), serial(n) {}
  };

  /// One ask in flight: what c-ares hands back to its callback.
  template <class Result> struct ask {
    core* owner;
    std::function<void(Result)> done;
  };

  boost::asio::io_context& loop;
  ares_channel channel = nullptr;
  std::string init_error;
  bool closing = false;
  std::unordered_map<int, std::unique_ptr<watched>> sockets;
  std::uint64_t next_serial = 0;
  boost::asio::steady_timer tick;

  explicit core(boost::asio::io_context& l) : loop(l), tick(l) {}

  void open(const std::string& servers) {
    library_init();
    ares_options options{};
    options.sock_state_cb = &core::on_socket_state;
    options.sock_state_cb_data = this;
    int status = ares_init_options(&channel, &options, ARES_OPT_SOCK_STATE_CB);
    if (status != ARES_SUCCESS) {
      channel = nullptr;
      init_error = std::string("the resolver could not start: ") + ares_strerror(status);
      return;
    }
    if (!servers.empty() && (status = ares_set_servers_ports_csv(channel, servers.c_str())) != ARES_SUCCESS)
      init_error = "bad DNS servers \"" + servers + "\": " + ares_strerror(status);
  }

  void close() {
    closing = true;
    tick.cancel();
    // Runs every callback still pending (ARES_EDESTRUCTION: dropped, `closing`) and closes the
    // sockets, each announced to on_socket_state first, which takes it out of the epoll.
    if (channel)
      ares_destroy(channel);
    channel = nullptr;
    for (auto& [fd, socket] : sockets)
      socket->descriptor.release();
    sockets.clear();
  }

  static void on_socket_state(void* data, ares_socket_t fd, int readable, int writable) {
    auto* self = static_cast<core*>(data);
    auto it = self->sockets.find(fd);
    if (!readable && !writable) {
      if (it != self->sockets.end()) {
        it->second->descriptor.release(); // c-ares closes it: never Asio
        self->sockets.erase(it);
      }
      return;
    }
    if (it == self->sockets.end())
      it = self->sockets.emplace(fd, std::make_unique<watched>(self->loop, fd, ++self->next_serial)).first;
    it->second->want_read = readable != 0;
    it->second->want_write = writable != 0;
    if (!self->closing)
      self->arm(fd);
  }

  void arm(int fd) {
    auto it = sockets.find(fd);
    if (it == sockets.end())
      return;
    watched& s = *it->second;
    if (s.want_read && !s.read_armed)
      wait_for(s, fd, true);
    if (s.want_write && !s.write_armed)
      wait_for(s, fd, false);
  }

  void wait_for(watched& s, int fd, bool read) {
    (read ? s.read_armed : s.write_armed) = true;
    using base = boost::asio::posix::descriptor_base;
    auto woke = [weak = weak_from_this(), fd, serial = s.serial, read](const boost::system::error_code& ec) {
      if (auto self = weak.lock())
        self->ready(fd, serial, read, ec);
    };
    s.descriptor.async_wait(read ? base::wait_read : base::wait_write, std::move(woke));
  }

  watched* find(int fd, std::uint64_t serial) {
    auto it = sockets.find(fd);
    return it != sockets.end() && it->second->serial == serial ? it->second.get() : nullptr;
  }

  void ready(int fd, std::uint64_t serial, bool read, const boost::system::error_code& ec) {
    watched* s = find(fd, serial);
    if (!s || closing)
      return; // released: c-ares closed that socket (the number may be a new socket's by now)
    (read ? s->read_armed : s->write_armed) = false;
    if (ec == boost::asio::error::operation_aborted)
      return;
    if (read) {
      for (int i = 0; i < max_reads_per_wakeup && channel; ++i) {
        ares_process_fd(channel, fd, ARES_SOCKET_BAD);
        s = find(fd, serial);
        if (!s || closing || !s->want_read || !readable_now(fd))
          break;
      }
    } else if (channel) {
      ares_process_fd(channel, ARES_SOCKET_BAD, fd);
    }
    if (!closing && find(fd, serial))
      arm(fd);
    schedule_tick();
  }

  /// The next retransmission or per-query timeout c-ares wants handled.
  void schedule_tick() {
    if (closing || !channel)
      return;
    timeval wait{};
    if (!ares_timeout(channel, nullptr, &wait)) {
      tick.cancel();
      return;
    }
    auto ms = std::chrono::milliseconds(wait.tv_sec * 1000 + (wait.tv_usec + 999) / 1000);
    tick.expires_after(ms);
    std::weak_ptr<core> weak = weak_from_this();
    tick.async_wait([weak](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || self->closing || !self->channel)
        return;
      ares_process_fd(self->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
      self->schedule_tick();
    });
  }

  static void on_addresses(void* arg, int status, int, ares_addrinfo* result) {
    std::unique_ptr<ask<dns_addresses>> a(static_cast<ask<dns_addresses>*>(arg));
    dns_addresses answer;
    answer.status = status_of(status);
    if (status != ARES_SUCCESS)
      answer.error = ares_strerror(status);
    if (result) {
      for (auto* node = result->nodes; node; node = node->ai_next) {
        char text[INET6_ADDRSTRLEN] = {};
        const void* where = nullptr;
        if (node->ai_family == AF_INET)
          where = &reinterpret_cast<const sockaddr_in*>(node->ai_addr)->sin_addr;
        else if (node->ai_family == AF_INET6)
          where = &reinterpret_cast<const sockaddr_in6*>(node->ai_addr)->sin6_addr;
        if (where && inet_ntop(node->ai_family, where, text, sizeof text))
          answer.addresses.emplace_back(text);
      }
      ares_freeaddrinfo(result);
    }
    if (answer.status == dns_status::found && answer.addresses.empty())
      answer.status = dns_status::nothing;
    if (!a->owner->closing)
      a->done(std::move(answer));
  }

  static void on_srv(void* arg, int status, int, unsigned char* buffer, int length) {
    std::unique_ptr<ask<dns_records>> a(static_cast<ask<dns_records>*>(arg));
    dns_records answer;
    answer.status = status_of(status);
    if (status == ARES_SUCCESS) {
      ares_srv_reply* replies = nullptr;
      int parsed = ares_parse_srv_reply(buffer, length, &replies);
      if (parsed != ARES_SUCCESS) {
        answer.status = status_of(parsed) == dns_status::nothing ? dns_status::nothing : dns_status::failed;
        answer.error = std::string("unreadable SRV answer: ") + ares_strerror(parsed);
      }
      for (auto* r = replies; r; r = r->next) {
        std::string target = r->host ? r->host : "";
        while (!target.empty() && target.back() == '.')
          target.pop_back();
        answer.records.push_back({std::move(target), r->port, r->priority, r->weight});
      }
      if (replies)
        ares_free_data(replies);
      if (answer.status == dns_status::found && answer.records.empty())
        answer.status = dns_status::nothing;
    } else {
      answer.error = ares_strerror(status);
    }
    if (!a->owner->closing)
      a->done(std::move(answer));
  }
};

dns_channel::dns_channel(boost::asio::io_context& loop, const std::string& servers)
    : core_(std::make_shared<core>(loop)) {
  core_->open(servers);
}

dns_channel::~dns_channel() { core_->close(); }

const std::string& dns_channel::init_error() const { return core_->init_error; }

void dns_channel::addresses(const std::string& name, std::function<void(dns_addresses)> done) {
  if (!core_->init_error.empty()) {
    done({dns_status::failed, {}, core_->init_error});
    return;
  }
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  // No sorting (RFC 6724 sorting connects a UDP socket per address: 10,000 of them for a hostile
  // answer); the watch orders what it keeps itself.
  hints.ai_flags = ARES_AI_NOSORT;
  hints.ai_socktype = SOCK_STREAM;
  auto* a = new core::ask<dns_addresses>{core_.get(), std::move(done)};
  ares_getaddrinfo(core_->channel, name.c_str(), nullptr, &hints, &core::on_addresses, a);
  core_->schedule_tick();
}

void dns_channel::srv(const std::string& name, std::function<void(dns_records)> done) {
  if (!core_->init_error.empty()) {
    done({dns_status::failed, {}, core_->init_error});
    return;
  }
  constexpr int class_in = 1, type_srv = 33;
  auto* a = new core::ask<dns_records>{core_.get(), std::move(done)};
  ares_search(core_->channel, name.c_str(), class_in, type_srv, &core::on_srv, a);
  core_->schedule_tick();
}

} // namespace gather
