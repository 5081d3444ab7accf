#include "budget.hpp"

#include <limits>

#include "autotrain/core/error.hpp"
#include "value.hpp"

namespace autotrain::data::jinja {
namespace {

thread_local Budget* active_budget = nullptr;

constexpr int64_t kBaseOperations = int64_t{8} << 20;
constexpr int64_t kOperationsPerInputByte = 64;
constexpr size_t kBaseAllocatedBytes = size_t{32} << 20;
constexpr size_t kAllocatedBytesPerInputByte = 16;
constexpr size_t kBaseOutputBytes = size_t{16} << 20;
constexpr size_t kOutputBytesPerInputByte = 4;

std::string mebibytes(size_t bytes) {
  return cat(bytes >> 20, " MiB");
}

[[noreturn]] void exhausted(const std::string& what) {
  throw Failure(cat("the template exceeded its budget: ", what,
                    " (a chat template renders a conversation in far less; see \"Limits\" in "
                    "docs/data.md)"));
}

}  // namespace

BudgetLimits BudgetLimits::for_input(size_t input_bytes) {
  const size_t bytes = std::min<size_t>(input_bytes, size_t{1} << 32);
  BudgetLimits limits;
  limits.operations = kBaseOperations + kOperationsPerInputByte * static_cast<int64_t>(bytes);
  limits.allocated_bytes = kBaseAllocatedBytes + kAllocatedBytesPerInputByte * bytes;
  limits.output_bytes = kBaseOutputBytes + kOutputBytesPerInputByte * bytes;
  return limits;
}

void Budget::spend_operations(int64_t count) {
  operations_ += count;
  if (operations_ > limits_.operations)
    exhausted(cat("more than ", limits_.operations, " operations"));
}

void Budget::spend_bytes(size_t bytes) {
  check_bytes(bytes);
  allocated_ += bytes;
}

void Budget::check_bytes(size_t bytes) const {
  if (bytes > limits_.allocated_bytes - allocated_)
    exhausted(cat("more than ", mebibytes(limits_.allocated_bytes),
                  " allocated in all (strings, lists and dicts it built)"));
}

void Budget::check_output(size_t total_bytes) const {
  if (total_bytes > limits_.output_bytes)
    exhausted(cat("an output of more than ", mebibytes(limits_.output_bytes)));
}

BudgetScope::BudgetScope(Budget& budget) : previous_(active_budget) {
  active_budget = &budget;
}

BudgetScope::~BudgetScope() {
  active_budget = previous_;
}

void spend_operations(int64_t count) {
  if (active_budget != nullptr) active_budget->spend_operations(count);
}

void spend_bytes(size_t bytes) {
  if (active_budget != nullptr) active_budget->spend_bytes(bytes);
}

void check_bytes(size_t bytes) {
  if (active_budget != nullptr) active_budget->check_bytes(bytes);
}

void check_output(size_t total_bytes) {
  if (active_budget != nullptr) active_budget->check_output(total_bytes);
}

void spend_scan(size_t bytes) {
  if (active_budget != nullptr)
    active_budget->spend_operations(static_cast<int64_t>(bytes / kBytesPerOperation));
}

size_t saturating_product(size_t a, size_t b) {
  size_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::numeric_limits<size_t>::max();
  return product;
}

}  // namespace autotrain::data::jinja
