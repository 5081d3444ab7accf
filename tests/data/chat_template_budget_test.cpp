// The render budget of chat templates (src/data/jinja/budget.hpp, docs/data.md "Limits"): a
// template from the Hub is untrusted input, so every bomb below ends in an Error naming the
// template's file and the budget that ran out, quickly, never in std::bad_alloc or a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "autotrain/core/error.hpp"
#include "autotrain/data/chat_template.hpp"
#include "test_support.hpp"

namespace autotrain::data::chat_template_budget_test {
namespace {

using nlohmann::ordered_json;
using testing::error_of;

const ordered_json kTwoTurns = ordered_json::parse(
    R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])");
constexpr const char* kOrigin = "models/evil/chat_template.jinja";
constexpr const char* kAllocated = "MiB allocated in all";
constexpr const char* kOperations = " operations (";
constexpr const char* kOutput = "an output of more than 16 MiB";

std::string render(const std::string& source, const ordered_json& messages = kTwoTurns) {
  return ChatTemplate::parse(source, kOrigin).render(messages, {});
}

// The error of rendering `source`, which must come well within a second (the bombs ran for
// minutes or until std::bad_alloc before the budget); generous for a loaded machine.
std::string bomb_error(const std::string& source) {
  const auto start = std::chrono::steady_clock::now();
  std::string error = error_of([&] { render(source); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0) << source;
  return error;
}

// The error names the file and line, then the budget that ran out.
void expect_budget(const std::string& source, const std::string& budget) {
  const std::string error = bomb_error(source);
  EXPECT_EQ(error.rfind(cat(kOrigin, " line 1: the template exceeded its budget: "), 0), 0u)
      << error;
  EXPECT_NE(error.find(budget), std::string::npos) << error;
}

TEST(ChatTemplateBudget, RepeatingByAHugeCountIsCheckedBeforeBuilding) {
  expect_budget("{{ 'ab' * 1000000000000000000 }}", kAllocated);
  expect_budget("{{ [1, 2] * 1000000000000000000 }}", kAllocated);
  // As in Python, an empty string or list repeated is empty, at once.
  EXPECT_EQ(render("{{ '' * 1000000000000000000 }}{{ [] * 10**18 }}"), "[]");
}

TEST(ChatTemplateBudget, DoublingANamespaceListStops) {
  expect_budget(
      "{% set ns = namespace(l=[1]) %}{% for i in range(40) %}"
      "{% set ns.l = ns.l + ns.l %}{% endfor %}",
      kAllocated);
}

TEST(ChatTemplateBudget, StringBuildersStopBeforeAllocating) {
  expect_budget("{{ ('a' * 1000000).replace('a', 'a' * 1000) }}", kAllocated);
  expect_budget("{{ ('a' * 1000000) | replace('a', 'a' * 1000) }}", kAllocated);
  expect_budget("{{ ('x\\n' * 100000) | indent(100000) }}", kAllocated);
  expect_budget("{{ 'x' | indent(1000000000000) }}", kAllocated);
  expect_budget("{{ (['a' * 60000000] * 1000) | join }}", kAllocated);
  expect_budget("{{ (['a' * 20000000] * 1000) | join }}", kAllocated);
  expect_budget("{{ ''.join(['a' * 60000000] * 1000) }}", kAllocated);
  expect_budget("{{ ''.join(['a' * 20000000] * 1000) }}", kAllocated);
  expect_budget("{{ (range(100000) | list) | tojson(indent=100000) }}", kAllocated);
  expect_budget("{{ ('a ' * 10000000).split(' ') | length }}", kAllocated);
  expect_budget("{{ ('a ' * 10000000).split() | length }}", kAllocated);
  expect_budget("{{ ['a' * 20000000] * 1000 }}", kAllocated);
}

TEST(ChatTemplateBudget, AllocationsCountCumulatively) {
  // Each string is freed at the next iteration; together they exceed the budget.
  expect_budget("{% for i in range(100000) %}{% set s = 'a' * 20000000 %}{% endfor %}", kAllocated);
  expect_budget(
      "{% set ns = namespace(s='x') %}{% for i in range(40) %}"
      "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
      kAllocated);
}

TEST(ChatTemplateBudget, QuadraticFiltersChargeTheirWork) {
  expect_budget("{{ ((range(100000) | list) * 40) | unique | length }}", kAllocated);
  expect_budget("{{ (range(100000) | list) | unique | length }}", kOperations);
}

TEST(ChatTemplateBudget, LoopsChargeOperations) {
  expect_budget(
      "{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}",
      kOperations);
}

TEST(ChatTemplateBudget, OutputIsBounded) {
  expect_budget("{% for i in range(100000) %}{{ 'a' * 1000 }}{% endfor %}", kOutput);
}

TEST(ChatTemplateBudget, CopiesOfALargeValueCostNothing) {
  // Values are shared, not copied: reading a 20 MB string 100000 times is cheap.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(render("{% set big = 'a' * 20000000 %}{% for i in range(100000) %}"
                   "{% set copy = big %}{% endfor %}done"),
            "done");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TEST(ChatTemplateBudget, RangeNearTheInt64LimitsNeitherOverflowsNorLoops) {
  EXPECT_EQ(render("{{ range(9223372036854775802, 9223372036854775807, 3) | list }}"),
            "[9223372036854775802, 9223372036854775805]");
  EXPECT_EQ(render("{{ range(-9223372036854775807 - 1, -9223372036854775805) | list }}"),
            "[-9223372036854775808, -9223372036854775807, -9223372036854775806]");
  EXPECT_EQ(render("{{ range(9223372036854775807, 9223372036854775800, -4) | list }}"),
            "[9223372036854775807, 9223372036854775803]");
  EXPECT_EQ(render("{{ range(0, 9223372036854775807, 9223372036854775807) | list }}"), "[0]");
  EXPECT_EQ(bomb_error("{{ range(-9223372036854775807, 9223372036854775807) }}"),
            cat(kOrigin, " line 1: range too big: the sandbox allows at most 100000 items"));
}

TEST(ChatTemplateBudget, SlicesWithHugeStepsStop) {
  EXPECT_EQ(render("{{ 'abc'[::9223372036854775807] }}{{ [1, 2, 3][2::-9223372036854775807] }}"),
            "a[3]");
}

TEST(ChatTemplateBudget, TheBudgetGrowsWithTheConversation) {
  // A 20 MB conversation renders (the output budget is 16 MiB plus four times the input).
  const std::string content(20'000'000, 'x');
  const ordered_json messages = {{{"role", "user"}, {"content", content}}};
  EXPECT_EQ(render("{% for m in messages %}{{ m.content }}{% endfor %}", messages).size(),
            content.size());
}

}  // namespace
}  // namespace autotrain::data::chat_template_budget_test
