#include "support/dns_stand_in.hpp"

#include <cstdio>
#include <fstream>

#include <catch2/catch.hpp>

namespace gather::test {

dns_stand_in::dns_stand_in(const nlohmann::json& zone)
    : zone_path_(temp_file(zone.dump())),
      process_("/usr/bin/python3", {std::string(GATHER_SOURCE_DIR) + "/tests/support/dns_server.py", zone_path_}) {
  auto line = process_.wait_for_line("port ");
  REQUIRE(line);
  port_ = std::stoi(line->substr(line->find(' ') + 1));
}

dns_stand_in::~dns_stand_in() { std::remove(zone_path_.c_str()); }

void dns_stand_in::set_zone(const nlohmann::json& zone) {
  const std::string next = zone_path_ + ".next";
  std::ofstream{next} << zone.dump();
  REQUIRE(std::rename(next.c_str(), zone_path_.c_str()) == 0);
}

bool dns_stand_in::saw_query(const std::string& name, std::chrono::milliseconds limit) {
  return process_.wait_for_line("query " + name + " ", limit).has_value();
}

} // namespace gather::test
