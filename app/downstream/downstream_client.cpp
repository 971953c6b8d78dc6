// libcurl's multi_socket interface driven by the Asio event loops: one curl multi handle per loop,
// its sockets watched by that loop's epoll, its timer one Asio timer. Other threads only post to
// a loop (submit, cancel); everything else belongs to the loop's thread, so the running transfers,
// the easy-handle free list and the multi handle need no lock.
//
// curl's sockets are opened and closed through our callbacks (CURLOPT_OPENSOCKETFUNCTION,
// CLOSESOCKETFUNCTION) so that each is registered with Asio for exactly its life: a descriptor
// closed behind Asio's back could leave a registration for a reused descriptor number.
#include "gather/downstream/downstream_client.hpp"

#include <algorithm>
#include <optional>
#include <csignal>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <curl/curl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gather/runtime/io_loops.hpp"

namespace gather {

namespace {

// Idle connections kept for reuse; far above the number of downstreams we talk to at once.
constexpr long max_cached_connections = 1024;
// Idle easy handles kept for reuse; beyond this, finished handles are freed.
constexpr std::size_t max_idle_handles = 1024;

// curl_global_init is not thread-safe and must precede every other libcurl call; a function-local
// static runs it once. With CURLOPT_NOSIGNAL a write to a peer-closed socket raises SIGPIPE in the
// process instead of inside curl, so it is ignored process-wide here too.
void init_process_once() {
  static const bool initialised = [] {
    std::signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw std::runtime_error("curl_global_init failed");
    return true;
  }();
  (void)initialised;
}

transfer_error classify(CURLcode code, bool body_cap_hit) {
  switch (code) {
  case CURLE_OK:
    return transfer_error::none;
  case CURLE_OPERATION_TIMEDOUT:
    return transfer_error::timeout;
  case CURLE_FILESIZE_EXCEEDED: // Content-Length announced more than the cap
    return transfer_error::too_large;
  case CURLE_WRITE_ERROR: // our write callback refused data
    return body_cap_hit ? transfer_error::too_large : transfer_error::protocol;
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_CONNECT:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:  // connection closed before any response byte
  case CURLE_PARTIAL_FILE: // connection closed mid-body: the peer went away, not a bad reply
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
    return transfer_error::connect;
  default:
    return transfer_error::protocol;
  }
}

} // namespace

namespace {

namespace asio = boost::asio;

// One running transfer; CURLOPT_PRIVATE points here.
struct transfer {
  std::uint64_t id = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::size_t max_body_bytes = 0;
  bool body_cap_hit = false;
  std::string body;
  char error_text[CURL_ERROR_SIZE] = {};
  downstream_client::completion done;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& t = *static_cast<transfer*>(user);
  const size_t n = size * count;
  if (t.body.size() + n > t.max_body_bytes) {
    t.body_cap_hit = true;
    return 0; // a short count makes curl abort with CURLE_WRITE_ERROR
  }
  t.body.append(data, n);
  return n;
}

void configure(transfer& t, const transfer_request& request) {
  CURL* e = t.easy;
  // At least 1 ms: to curl a timeout of 0 means "wait forever".
  const long timeout_ms = std::max<long>(1, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(e, CURLOPT_URL, request.url.c_str());
  for (const std::string& line : request.headers)
    t.headers = curl_slist_append(t.headers, line.c_str());
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
  // Timers instead of SIGALRM: signals cannot target one transfer among thousands on a thread.
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  // A whole-transfer deadline, so a trickling body cannot stretch a call past it.
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  // A 3xx is the downstream's answer: following it could leave the configured host.
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  // The URL was rendered with care (encoded dot segments); curl must not rewrite it.
  curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
  // Downstream addresses come from the config alone, never from an inherited http_proxy.
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  // Refuses an announced oversize body before reading it; on_body catches the unannounced.
  curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(request.max_body_bytes));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.error_text);
  curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
}

/// One curl multi handle and everything it runs, owned by one event loop.
class loop_client {
public:
  loop_client(asio::io_context& loop, std::atomic<std::size_t>& inflight)
    : loop_(loop), timer_(loop), inflight_(inflight) {
    multi_ = curl_multi_init();
    if (!multi_)
      throw std::runtime_error("curl_multi_init failed");
    // Keep-alive connections survive in the multi handle's cache; the default (4 x handles)
    // would close idle connections to downstreams we will call again a moment later.
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, max_cached_connections);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &loop_client::on_socket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &loop_client::on_timer_change);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  }

  /// The loop has stopped (or never ran): nothing runs any more, so this may tidy up from any thread.
  ~loop_client() {
    while (!running_.empty())
      forget(running_.begin()->first);
    for (CURL* easy : idle_handles_)
      curl_easy_cleanup(easy);
    curl_multi_cleanup(multi_); // closes the cached connections through on_close_socket
    for (auto& [fd, watched] : sockets_)
      watched->descriptor.release(); // curl owns (and has closed) what is left
    sockets_.clear();
  }

  asio::io_context& loop() { return loop_; }

  // ---- on the loop's thread --------------------------------------------------------------------

  void start(std::uint64_t id, transfer_request request, downstream_client::completion done) {
    auto t = std::make_unique<transfer>();
    t->id = id;
    t->max_body_bytes = request.max_body_bytes;
    t->done = std::move(done);
    t->easy = take_easy_handle();
    if (!t->easy)
      return fail_to_start(*t, "curl_easy_init failed");
    configure(*t, request);
    curl_easy_setopt(t->easy, CURLOPT_OPENSOCKETFUNCTION, &loop_client::on_open_socket);
    curl_easy_setopt(t->easy, CURLOPT_OPENSOCKETDATA, this);
    curl_easy_setopt(t->easy, CURLOPT_CLOSESOCKETFUNCTION, &loop_client::on_close_socket);
    curl_easy_setopt(t->easy, CURLOPT_CLOSESOCKETDATA, this);
    const CURLMcode added = curl_multi_add_handle(multi_, t->easy); // arms the timer: curl starts it
    if (added != CURLM_OK) {
      recycle(*t);
      return fail_to_start(*t, curl_multi_strerror(added));
    }
    running_.emplace(t->id, std::move(t));
  }

  /// Removes a transfer without running its completion; unknown ids were already finished.
  void abandon(std::uint64_t id) {
    if (running_.count(id))
      forget(id);
  }

private:
  /// A socket curl opened, watched by this loop.
  struct watched_socket {
    explicit watched_socket(asio::io_context& loop) : descriptor(loop) {}
    asio::posix::stream_descriptor descriptor;
    int wanted = 0;            ///< CURL_POLL_* curl asked for last
    bool reading = false;      ///< a read wait is pending
    bool writing = false;      ///< a write wait is pending
    bool foreign = false;      ///< not opened through on_open_socket (the resolver's socketpair)
  };

  // curl callbacks. curl never calls them re-entrantly from another thread: they run inside
  // curl_multi_* calls made on this loop.

  static curl_socket_t on_open_socket(void* self_ptr, curlsocktype, curl_sockaddr* address) {
    auto& self = *static_cast<loop_client*>(self_ptr);
    const int fd = ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    if (fd < 0)
      return CURL_SOCKET_BAD;
    // curl 7.88 closes some sockets it opened here without calling on_close_socket (seen for
    // connects that time out: CURL_POLL_REMOVE, then a plain close). An entry still under this
    // number is such a socket's: released before the new socket registers (its epoll entry went
    // with the old socket), not left in place, where the new entry's descriptor, failing to be
    // stored, would close the new socket under curl.
    if (auto stale = self.sockets_.find(fd); stale != self.sockets_.end()) {
      stale->second->wanted = 0;
      stale->second->descriptor.release();
      self.sockets_.erase(stale);
    }
    auto watched = std::make_shared<watched_socket>(self.loop_);
    boost::system::error_code ec;
    watched->descriptor.assign(fd, ec);
    if (ec) {
      ::close(fd);
      return CURL_SOCKET_BAD;
    }
    self.sockets_.emplace(fd, std::move(watched));
    return fd;
  }

  static int on_close_socket(void* self_ptr, curl_socket_t fd) {
    auto& self = *static_cast<loop_client*>(self_ptr);
    auto it = self.sockets_.find(fd);
    if (it != self.sockets_.end()) {
      it->second->wanted = 0;
      it->second->descriptor.release(); // deregisters from epoll while the number is still ours
      self.sockets_.erase(it);
    }
    return ::close(fd);
  }

  static int on_socket(CURL*, curl_socket_t fd, int what, void* self_ptr, void*) {
    auto& self = *static_cast<loop_client*>(self_ptr);
    auto it = self.sockets_.find(fd);
    if (it == self.sockets_.end()) {
      // Not opened through on_open_socket: the threaded resolver's socketpair. Watched while
      // curl wants it, released (never closed: curl closes it) when curl says REMOVE.
      if (what == CURL_POLL_REMOVE)
        return 0;
      auto watched = std::make_shared<watched_socket>(self.loop_);
      boost::system::error_code ec;
      watched->descriptor.assign(fd, ec);
      if (ec)
        return -1;
      watched->foreign = true;
      it = self.sockets_.emplace(fd, std::move(watched)).first;
    }
    auto watched = it->second;
    watched->wanted = what == CURL_POLL_REMOVE ? 0 : what;
    if (what == CURL_POLL_REMOVE && watched->foreign) {
      watched->descriptor.release();
      self.sockets_.erase(it);
      return 0;
    }
    self.arm(watched, fd);
    return 0;
  }

  /// Curl wants its timeout function called in `ms` (-1: no timer). A later time than the one
  /// pending only moves the target (the pending wait re-arms when it fires): re-arming Asio's timer
  /// on every call is a timerfd syscall each time, and curl calls this for every transfer step.
  static int on_timer_change(CURLM*, long ms, void* self_ptr) {
    auto& self = *static_cast<loop_client*>(self_ptr);
    if (ms < 0) {
      self.timer_target_.reset();
      return 0;
    }
    const auto at = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    self.timer_target_ = at;
    if (ms == 0) {
      // "Call me at once": but never from inside curl's callback.
      if (!self.kick_posted_) {
        self.kick_posted_ = true;
        asio::post(self.loop_, [&self] {
          self.kick_posted_ = false;
          self.on_timeout();
        });
      }
      return 0;
    }
    if (self.timer_pending_ && self.timer_.expiry() <= at)
      return 0;
    self.timer_.expires_at(at);
    self.wait_timer();
    return 0;
  }

  void wait_timer() {
    timer_pending_ = true;
    ++timer_waits_;
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (--timer_waits_ == 0)
        timer_pending_ = false;
      if (ec || timer_pending_)
        return;
      if (!timer_target_)
        return;
      if (std::chrono::steady_clock::now() < *timer_target_) {
        timer_.expires_at(*timer_target_);
        return wait_timer();
      }
      on_timeout();
    });
  }

  void on_timeout() {
    timer_target_.reset();
    int running = 0;
    curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
    complete_finished();
  }

  /// Waits for what curl wants of `fd` that no wait covers yet.
  void arm(const std::shared_ptr<watched_socket>& watched, int fd) {
    if ((watched->wanted & CURL_POLL_IN) && !watched->reading) {
      watched->reading = true;
      watched->descriptor.async_wait(asio::posix::descriptor_base::wait_read,
                                     [this, watched, fd](const boost::system::error_code& ec) {
                                       watched->reading = false;
                                       on_ready(watched, fd, ec, CURL_POLL_IN, CURL_CSELECT_IN);
                                     });
    }
    if ((watched->wanted & CURL_POLL_OUT) && !watched->writing) {
      watched->writing = true;
      watched->descriptor.async_wait(asio::posix::descriptor_base::wait_write,
                                     [this, watched, fd](const boost::system::error_code& ec) {
                                       watched->writing = false;
                                       on_ready(watched, fd, ec, CURL_POLL_OUT, CURL_CSELECT_OUT);
                                     });
    }
  }

  void on_ready(const std::shared_ptr<watched_socket>& watched, int fd,
                const boost::system::error_code& ec, int direction, int select) {
    if (ec == asio::error::operation_aborted || !(watched->wanted & direction))
      return; // released, or curl no longer wants this direction
    int running = 0;
    curl_multi_socket_action(multi_, fd, ec ? CURL_CSELECT_ERR : select, &running);
    complete_finished();
    if (watched->wanted) // still ours and still wanted: wait again
      arm(watched, fd);
  }

  CURL* take_easy_handle() {
    if (idle_handles_.empty())
      return curl_easy_init();
    CURL* easy = idle_handles_.back();
    idle_handles_.pop_back();
    return easy;
  }

  void recycle(transfer& t) {
    curl_multi_remove_handle(multi_, t.easy); // closes the connection if the transfer is unfinished
    curl_slist_free_all(t.headers);
    if (idle_handles_.size() < max_idle_handles) {
      curl_easy_reset(t.easy); // drops every option; the connection cache is the multi handle's
      idle_handles_.push_back(t.easy);
    } else {
      curl_easy_cleanup(t.easy);
    }
  }

  void fail_to_start(transfer& t, const char* why) {
    --inflight_;
    transfer_result result;
    result.error = transfer_error::protocol;
    result.detail = why;
    t.done(std::move(result));
  }

  void complete_finished() {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      void* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      complete(*static_cast<transfer*>(t), msg->data.result);
    }
  }

  // Runs the completion last: it may submit or cancel transfers itself.
  void complete(transfer& t, CURLcode code) {
    transfer_result result;
    result.error = classify(code, t.body_cap_hit);
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &result.http_status);
    if (result.error == transfer_error::none)
      result.body = std::move(t.body);
    else
      result.detail = t.error_text[0] ? t.error_text : curl_easy_strerror(code);
    downstream_client::completion done = std::move(t.done);
    forget(t.id);
    done(std::move(result));
  }

  void forget(std::uint64_t id) {
    auto it = running_.find(id);
    recycle(*it->second);
    running_.erase(it);
    --inflight_;
  }

  asio::io_context& loop_;
  asio::steady_timer timer_;
  std::atomic<std::size_t>& inflight_;
  CURLM* multi_ = nullptr;
  std::unordered_map<std::uint64_t, std::unique_ptr<transfer>> running_;
  std::unordered_map<int, std::shared_ptr<watched_socket>> sockets_;
  std::vector<CURL*> idle_handles_;
  std::optional<std::chrono::steady_clock::time_point> timer_target_;
  bool timer_pending_ = false;
  int timer_waits_ = 0;
  bool kick_posted_ = false;
};

} // namespace

struct downstream_client::impl {
  std::unique_ptr<io_loops> own_loops; ///< only when the client runs loops of its own
  io_loops& loops;
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<std::size_t> inflight{0};
  std::atomic<std::size_t> queued{0};
  std::vector<std::unique_ptr<loop_client>> clients; ///< one per loop

  impl(std::unique_ptr<io_loops> own, io_loops& l) : own_loops(std::move(own)), loops(l) {
    init_process_once();
    for (std::size_t i = 0; i < loops.size(); ++i)
      clients.push_back(std::make_unique<loop_client>(loops.loop(i), inflight));
    if (own_loops)
      own_loops->start();
  }

  ~impl() {
    if (own_loops)
      own_loops->stop();
  }

  /// Ids carry their loop: id % loops.
  loop_client& client_of(std::uint64_t id) { return *clients[id % clients.size()]; }
};

namespace {
std::unique_ptr<io_loops> one_loop() { return std::make_unique<io_loops>(1); }
} // namespace

downstream_client::downstream_client() {
  auto own = one_loop();
  auto& loops = *own;
  impl_ = std::make_unique<impl>(std::move(own), loops);
}

downstream_client::downstream_client(io_loops& loops) : impl_(std::make_unique<impl>(nullptr, loops)) {}

downstream_client::~downstream_client() = default;

std::uint64_t downstream_client::submit(transfer_request request, completion done) {
  const std::uint64_t id = impl_->next_id++;
  ++impl_->inflight;
  ++impl_->queued;
  auto& client = impl_->client_of(id);
  asio::post(client.loop(), [im = impl_.get(), &client, id, request = std::move(request),
                             done = std::move(done)]() mutable {
    --im->queued;
    client.start(id, std::move(request), std::move(done));
  });
  return id;
}

void downstream_client::cancel(std::uint64_t id) {
  ++impl_->queued;
  auto& client = impl_->client_of(id);
  asio::post(client.loop(), [im = impl_.get(), &client, id] {
    --im->queued;
    client.abandon(id);
  });
}

std::size_t downstream_client::inflight() const { return impl_->inflight.load(); }

std::size_t downstream_client::queued() const { return impl_->queued.load(); }

} // namespace gather
