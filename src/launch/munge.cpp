#include "autotrain/launch/munge.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace autotrain {

SocketState probe_unix_socket(const std::string& path, std::string* why) {
  sockaddr_un address{};
  if (path.size() >= sizeof(address.sun_path)) {
    if (why != nullptr) *why = "the path is longer than a Unix socket's";
    return SocketState::refuses;
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    if (why != nullptr) *why = std::strerror(errno);
    return SocketState::refuses;
  }
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int status = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int error = errno;
  ::close(fd);
  if (status == 0) return SocketState::answers;
  if (error == ENOENT) return SocketState::absent;
  if (why != nullptr) *why = std::strerror(error);
  return SocketState::refuses;
}

}  // namespace autotrain
