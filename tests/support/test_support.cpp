#include "test_support.hpp"

#include <mpi.h>
#include <stdlib.h>

#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "autotrain/core/error.hpp"

namespace autotrain::testing {

std::filesystem::path fixture(const std::string& relative) {
  return std::filesystem::path(AUTOTRAIN_TEST_SOURCE_DIR) / "tests" / "data" / relative;
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

std::filesystem::path source_path(const std::string& relative) {
  return std::filesystem::path(AUTOTRAIN_TEST_SOURCE_DIR) / relative;
}

std::vector<double> random_vec(std::size_t n, std::uint32_t seed, double scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "autotrain-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

SharedTempDir::SharedTempDir() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string name;
  if (rank == 0) {
    owned_ = std::make_unique<TempDir>();
    name = owned_->path().string();
  }
  int length = static_cast<int>(name.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  name.resize(static_cast<size_t>(length));
  MPI_Bcast(name.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  path_ = name;
}

SharedTempDir::~SharedTempDir() {
  MPI_Barrier(MPI_COMM_WORLD);
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace autotrain::testing
