// Closed-loop GETs over raw keep-alive sockets, timing each answer as its bytes arrive: the first
// byte, the moment the `base` section's data is in hand (the NDJSON line that carries it, or the
// whole JSON answer), and the end. Prints one line per figure with p50 and p99 in ms.
//
//   stream_probe HOST PORT TARGET ACCEPT CONNS SECONDS
//
// ACCEPT is the Accept header's value: application/json (the whole answer) or application/x-ndjson.
// One thread per connection: each blocks on its own socket, so nothing buffers or batches reads.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

using clock_type = std::chrono::steady_clock;

namespace {

struct timings {
  std::vector<double> first_byte, base, end;
  long failed = 0;
};

double ms(clock_type::time_point from, clock_type::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

/// One connection's loop. Answers are read until complete: Content-Length, or the last chunk.
void caller(const sockaddr_in& addr, const std::string& request, bool ndjson, clock_type::time_point stop,
            timings& out, std::mutex& mutex) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  timings mine;
  std::string buffer;
  char chunk[16384];
  while (clock_type::now() < stop) {
    const auto sent = clock_type::now();
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
      break;
    clock_type::time_point first{}, base{};
    bool done = false;
    buffer.clear();
    std::size_t body_start = std::string::npos, length = 0;
    bool chunked = false;
    while (!done) {
      const auto n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) {
        ++mine.failed;
        ::close(fd);
        return;
      }
      const auto now = clock_type::now();
      if (first == clock_type::time_point{})
        first = now;
      buffer.append(chunk, static_cast<std::size_t>(n));
      if (body_start == std::string::npos) {
        const auto head_end = buffer.find("\r\n\r\n");
        if (head_end == std::string::npos)
          continue;
        body_start = head_end + 4;
        const auto head = buffer.substr(0, head_end);
        chunked = head.find("Transfer-Encoding: chunked") != std::string::npos;
        if (const auto at = head.find("Content-Length: "); at != std::string::npos)
          length = std::stoul(head.substr(at + 16));
        if (head.compare(9, 3, "200") != 0)
          ++mine.failed;
      }
      if (ndjson && base == clock_type::time_point{} &&
          buffer.find("{\"section\":\"base\"", body_start) != std::string::npos)
        base = now;
      done = chunked ? buffer.size() >= 5 && buffer.compare(buffer.size() - 5, 5, "0\r\n\r\n") == 0
                     : buffer.size() >= body_start + length;
      if (done && !ndjson)
        base = now;
    }
    mine.first_byte.push_back(ms(sent, first));
    mine.base.push_back(ms(sent, base));
    mine.end.push_back(ms(sent, clock_type::now()));
  }
  ::close(fd);
  std::lock_guard<std::mutex> lock{mutex};
  for (auto [from, to] : {std::pair{&mine.first_byte, &out.first_byte}, {&mine.base, &out.base}, {&mine.end, &out.end}})
    to->insert(to->end(), from->begin(), from->end());
  out.failed += mine.failed;
}

void report(const char* what, std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  const auto q = [&](double f) { return v.empty() ? 0.0 : v[std::min(v.size() - 1, static_cast<std::size_t>(v.size() * f))]; };
  std::printf("%-11s p50 %6.1f  p99 %6.1f ms\n", what, q(0.5), q(0.99));
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: stream_probe HOST PORT TARGET ACCEPT CONNS SECONDS\n");
    return 2;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(std::atoi(argv[2])));
  ::inet_pton(AF_INET, argv[1], &addr.sin_addr);
  const std::string accept = argv[4];
  const std::string request = std::string("GET ") + argv[3] + " HTTP/1.1\r\nHost: " + argv[1] +
                              "\r\nAccept: " + accept + "\r\n\r\n";
  const int conns = std::atoi(argv[5]);
  const double seconds = std::atof(argv[6]);
  const auto stop = clock_type::now() + std::chrono::milliseconds{static_cast<long>(seconds * 1000)};
  timings all;
  std::mutex mutex;
  std::vector<std::thread> threads;
  for (int i = 0; i < conns; ++i)
    threads.emplace_back(caller, std::cref(addr), std::cref(request), accept == "application/x-ndjson", stop,
                         std::ref(all), std::ref(mutex));
  for (auto& t : threads)
    t.join();
  std::printf("%s: %zu answers (%.0f/s), %ld failed\n", accept.c_str(), all.end.size(), all.end.size() / seconds,
              all.failed);
  report("first byte", all.first_byte);
  report("base data", all.base);
  report("whole", all.end);
  return 0;
}
