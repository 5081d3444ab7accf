#pragma once
// This host's IPv4 interfaces, as the launcher and the communicators need them: the address
// other nodes reach rank 0 at (MASTER_ADDR), and the local address a rank uses towards it. IPv4
// only, as the launchers (Slurm, Open MPI's TCP) and Gloo's and NCCL's bootstraps use by default.
#include <optional>
#include <string>
#include <vector>

namespace autotrain {

struct NetworkInterface {
  std::string name;     // "eth0"
  std::string address;  // "10.201.0.11"
  bool loopback = false;
};

// This host's name (gethostname), "localhost" when it has none.
std::string host_name();

// Every interface that is up and has an IPv4 address, in the system's order.
std::vector<NetworkInterface> ipv4_interfaces();

// "lo 127.0.0.1, eth0 10.201.0.11": the interfaces, for messages.
std::string describe_interfaces(const std::vector<NetworkInterface>& interfaces);

// An IPv4 address of this host that other hosts can reach (the first up, non-loopback interface,
// skipping container bridges), or the hostname when there is none.
std::string host_address();

// The local address this host sends from towards `destination` (an IPv4 address): the source
// address of the route the kernel picks, found without sending anything (a UDP socket's
// connect). Empty when `destination` is not an IPv4 address or no route reaches it.
std::optional<std::string> route_source_address(const std::string& destination);

// The IPv4 address of the interface `name`; empty when it has none or does not exist.
std::optional<std::string> interface_address(const std::string& name);

// `host` (a name or an IPv4 address) resolved to an IPv4 address; empty when it does not resolve.
std::optional<std::string> resolve_ipv4(const std::string& host);

// A TCP socket listening on `port` of every local address (what a rendezvous on MASTER_PORT
// needs), closed on destruction. `error` says why when it could not listen ("Address already in
// use").
class TcpListener {
 public:
  explicit TcpListener(int port);
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;
  bool listening() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  std::string error_;
};

// Whether a TCP connection to `address`:`port` opens within `timeout_ms`; empty when it does,
// else the reason ("Connection refused", "timed out after 3000 ms").
std::string tcp_connect_error(const std::string& address, int port, int timeout_ms);

}  // namespace autotrain
