// CPU per KB of compressing answers with the gateway's own encoders (app/front/body_encoder.cpp):
// a whole answer at once, and the same answer as a progressive one, flushed line by line.
//
//   compress_cost [ROUNDS]
//
// The input is an aggregate answer of the demo's shape (six sections, ~1.6 KB) and a 40 KB one
// (a section with a 300-row list). Prints, per coding and level, the CPU (this thread's
// CLOCK_THREAD_CPUTIME_ID) per KB of input and the compressed size.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "gather/front/body_encoder.hpp"

namespace {

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

std::vector<std::string> answer_lines(int rows) {
  std::vector<std::string> lines;
  const char* names[] = {"base", "price", "stock", "promo", "reviews", "shop"};
  for (int s = 0; s < 6; ++s) {
    std::string data = "{\"id\":\"42\",\"title\":\"Demo product 42\",\"currency\":\"CNY\",\"amount\":199.0";
    if (s == 0 && rows > 0) {
      data += ",\"items\":[";
      for (int i = 0; i < rows; ++i)
        data += (i ? "," : "") + std::string("{\"sku\":\"sku-") + std::to_string(100000 + i * 7) +
                "\",\"name\":\"item " + std::to_string(i) + "\",\"price\":" + std::to_string(i % 97) + ".25}";
      data += "]";
    }
    data += "}";
    lines.push_back(std::string("{\"section\":\"") + names[s] +
                    "\",\"status\":\"ok\",\"source\":\"live\",\"attempts\":1,\"ms\":12,\"data\":" + data + "}\n");
  }
  lines.push_back("{\"done\":true,\"degraded\":false,\"warnings\":[],\"request_id\":\"0123456789abcdef0123456789abcdef\"}\n");
  return lines;
}

} // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 2000;
  // The first pass is not shown: until glibc's malloc has raised its mmap threshold past the
  // encoders' state (zlib's ~256 KiB), every encoder's allocation is an mmap and page faults, and
  // a cold process reads 10-50x the steady cost (measured: gzip 6 on 1 KB, 416 vs 8 us/KB).
  for (int pass = 0; pass < 2; ++pass)
  for (int rows : {0, 300}) {
    const auto lines = answer_lines(rows);
    std::string whole;
    for (const auto& line : lines)
      whole += line;
    if (pass == 1)
      std::printf("answer of %.1f KB (%zu lines)\n", whole.size() / 1024.0, lines.size());
    struct setting {
      gather::content_coding coding;
      int level;
    };
    for (auto [coding, level] : std::vector<setting>{{gather::content_coding::gzip, 1}, {gather::content_coding::gzip, 6},
                                                     {gather::content_coding::gzip, 9}, {gather::content_coding::br, 0},
                                                     {gather::content_coding::br, 4}, {gather::content_coding::br, 6},
                                                     {gather::content_coding::br, 11}}) {
      gather::compression_config settings;
      settings.gzip_level = level;
      settings.br_quality = level;
      const int n = coding == gather::content_coding::br && level == 11 ? rounds / 20 + 1 : rounds;
      std::size_t whole_size = 0, stream_size = 0;
      auto start = thread_cpu_us();
      for (int i = 0; i < n; ++i)
        whole_size = gather::encode_whole(coding, settings, whole).size();
      const double whole_us = (thread_cpu_us() - start) / n;
      start = thread_cpu_us();
      for (int i = 0; i < n; ++i) {
        auto encoder = gather::body_encoder::make(coding, settings);
        stream_size = 0;
        for (std::size_t l = 0; l + 1 < lines.size(); ++l)
          stream_size += encoder->flush(lines[l]).size();
        stream_size += encoder->finish(lines.back()).size();
      }
      const double stream_us = (thread_cpu_us() - start) / n;
      const double kb = whole.size() / 1024.0;
      if (pass == 1)
        std::printf("  %-4s %2d  whole %6.1f us/KB -> %5.1f%%   per line %6.1f us/KB -> %5.1f%%\n",
                  coding == gather::content_coding::br ? "br" : "gzip", level, whole_us / kb,
                  100.0 * whole_size / whole.size(), stream_us / kb, 100.0 * stream_size / whole.size());
    }
  }
  return 0;
}
