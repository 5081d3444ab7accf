#include "autotrain/launch/munge.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "test_support.hpp"

namespace autotrain::munge_test {
namespace {

// A Unix socket listening at `path`; closing it leaves the file behind, as a stopped munged does.
int listen_at(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(::listen(fd, 4), 0);
  return fd;
}

TEST(MungeSocket, AnswersWhileSomethingListensIsRefusedWhenTheFileIsLeftAndAbsentWithoutIt) {
  const testing::TempDir dir;
  const std::string path = (dir.path() / "munge.socket.2").string();
  EXPECT_EQ(probe_unix_socket(path), SocketState::absent);
  const int listener = listen_at(path);
  EXPECT_EQ(probe_unix_socket(path), SocketState::answers);
  ::close(listener);
  std::string why;
  EXPECT_EQ(probe_unix_socket(path, &why), SocketState::refuses);
  EXPECT_EQ(why, "Connection refused");
  std::filesystem::remove(path);
  EXPECT_EQ(probe_unix_socket(path), SocketState::absent);
}

}  // namespace
}  // namespace autotrain::munge_test
