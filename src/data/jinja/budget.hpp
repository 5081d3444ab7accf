#pragma once
// The one budget of a render. A chat template comes from the Hub and is treated as untrusted,
// as a browser treats a page: every render may spend at most so many operations, allocate at
// most so many bytes in all (every string, list and dict it builds counts, cumulatively, not
// only the largest), and write at most so many bytes of output. A real template renders a
// conversation of a few KB in a few thousand operations and well under a MiB; the limits leave
// a margin of a thousandfold and grow with the conversation's size.
//
// Builders check before they allocate (`'' * n` checks n * len first), so a template that would
// exceed the budget stops with a Failure naming the budget, never with std::bad_alloc or a hang.
//
// The budget of the render running on this thread is installed by a BudgetScope; the functions
// below charge it from anywhere in the engine (operators, filters, methods, string helpers).
// Without a scope (values built outside a render, such as the messages) nothing is charged.
#include <cstddef>
#include <cstdint>

namespace autotrain::data::jinja {

struct BudgetLimits {
  int64_t operations = 0;
  size_t allocated_bytes = 0;
  size_t output_bytes = 0;

  // The limits for a render whose variables (messages, tools, ...) are `input_bytes` of JSON.
  static BudgetLimits for_input(size_t input_bytes);
};

class Budget {
 public:
  explicit Budget(BudgetLimits limits) : limits_(limits) {}

  void spend_operations(int64_t count);
  void spend_bytes(size_t bytes);
  // Throws when `bytes` more would not fit, without spending them (the value that is about to
  // be built spends them when it becomes a Value).
  void check_bytes(size_t bytes) const;
  void check_output(size_t total_bytes) const;

  const BudgetLimits& limits() const { return limits_; }

 private:
  BudgetLimits limits_;
  int64_t operations_ = 0;
  size_t allocated_ = 0;
};

// Installs `budget` as this thread's for its lifetime.
class BudgetScope {
 public:
  explicit BudgetScope(Budget& budget);
  ~BudgetScope();
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  Budget* previous_;
};

// Charges this thread's budget, if a render is running.
void spend_operations(int64_t count = 1);
void spend_bytes(size_t bytes);
void check_bytes(size_t bytes);
void check_output(size_t total_bytes);
// Work proportional to `bytes` of text scanned or copied: one operation per kBytesPerOperation.
void spend_scan(size_t bytes);
constexpr size_t kBytesPerOperation = 64;

// a * b for budget checks, saturating instead of wrapping.
size_t saturating_product(size_t a, size_t b);

}  // namespace autotrain::data::jinja
