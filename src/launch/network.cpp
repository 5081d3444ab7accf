#include "autotrain/launch/network.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace autotrain {
namespace {

// Interfaces that other hosts cannot reach us through (container and VM bridges).
bool is_virtual_bridge(std::string_view name) {
  return name.starts_with("docker") || name.starts_with("veth") || name.starts_with("virbr") ||
         name.starts_with("br-");
}

std::string address_text(const in_addr& address) {
  std::array<char, INET_ADDRSTRLEN> text{};
  if (inet_ntop(AF_INET, &address, text.data(), text.size()) == nullptr) return {};
  return text.data();
}

}  // namespace

std::string host_name() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "localhost";
  return name.data();
}

std::vector<NetworkInterface> ipv4_interfaces() {
  std::vector<NetworkInterface> found;
  ifaddrs* interfaces = nullptr;
  if (getifaddrs(&interfaces) != 0) return found;
  const std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> owner(interfaces, &freeifaddrs);
  for (const ifaddrs* entry = interfaces; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if ((entry->ifa_flags & IFF_UP) == 0) continue;
    sockaddr_in address{};
    std::memcpy(&address, entry->ifa_addr, sizeof address);
    found.push_back(
        {entry->ifa_name, address_text(address.sin_addr), (entry->ifa_flags & IFF_LOOPBACK) != 0});
  }
  return found;
}

std::string describe_interfaces(const std::vector<NetworkInterface>& interfaces) {
  std::string text;
  for (const auto& interface : interfaces) {
    text += (text.empty() ? "" : ", ") + interface.name + " " + interface.address;
  }
  return text.empty() ? "none with an IPv4 address" : text;
}

std::string host_address() {
  for (const auto& interface : ipv4_interfaces()) {
    if (!interface.loopback && !is_virtual_bridge(interface.name)) return interface.address;
  }
  return host_name();
}

std::optional<std::string> route_source_address(const std::string& destination) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);  // any port: nothing is sent
  if (inet_pton(AF_INET, destination.c_str(), &to.sin_addr) != 1) return std::nullopt;
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> source;
  sockaddr_in from{};
  socklen_t length = sizeof from;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&from), &length) == 0) {
    source = address_text(from.sin_addr);
  }
  close(fd);
  return source;
}

std::optional<std::string> interface_address(const std::string& name) {
  for (const auto& interface : ipv4_interfaces()) {
    if (interface.name == name) return interface.address;
  }
  return std::nullopt;
}

std::optional<std::string> resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0 || result == nullptr) {
    return std::nullopt;
  }
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(result, &freeaddrinfo);
  sockaddr_in address{};
  std::memcpy(&address, result->ai_addr, sizeof address);
  return address_text(address.sin_addr);
}

TcpListener::TcpListener(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) {
    error_ = std::strerror(errno);
    return;
  }
  // Connections of an earlier run still in TIME_WAIT do not make the port busy; a listener does.
  const int reuse = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      listen(fd_, 64) != 0) {
    error_ = std::strerror(errno);
    close(fd_);
    fd_ = -1;
  }
}

TcpListener::~TcpListener() {
  if (fd_ >= 0) close(fd_);
}

std::string tcp_connect_error(const std::string& address, int port, int timeout_ms) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &to.sin_addr) != 1) {
    return "not an IPv4 address";
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::strerror(errno);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string error;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    if (errno != EINPROGRESS) {
      error = std::strerror(errno);
    } else {
      pollfd waiting{fd, POLLOUT, 0};
      const int ready = poll(&waiting, 1, timeout_ms);
      int status = 0;
      socklen_t length = sizeof status;
      if (ready == 0) {
        error = "timed out after " + std::to_string(timeout_ms) + " ms";
      } else if (ready < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &status, &length) != 0) {
        error = std::strerror(errno);
      } else if (status != 0) {
        error = std::strerror(status);
      }
    }
  }
  close(fd);
  return error;
}

}  // namespace autotrain
