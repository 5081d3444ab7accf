// Chat templates (autotrain/data/chat_template.hpp), one behaviour per test. The expected texts
// are what Python's jinja2 renders with transformers' settings (trim_blocks, lstrip_blocks,
// loopcontrols, its tojson); the real templates of Llama 3 and Qwen3 and AutoTrain's formats are
// checked against @huggingface/jinja and jinja2 in tests/e2e/hf_chat_templates.sh.
#include "autotrain/data/chat_template.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "autotrain/core/error.hpp"
#include "test_support.hpp"

namespace autotrain::data::chat_template_test {
namespace {

using nlohmann::ordered_json;
using testing::error_of;

const ordered_json kTwoTurns = ordered_json::parse(
    R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])");

std::string render(const std::string& source, const ordered_json& messages = kTwoTurns,
                   const ChatContext& context = {}) {
  return ChatTemplate::parse(source, "tpl").render(messages, context);
}

std::string render_error(const std::string& source, const ordered_json& messages = kTwoTurns) {
  return error_of([&] { render(source, messages); });
}

// For messages that end in a long list of what is supported.
bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// ---- values and expressions ----

TEST(ChatTemplate, RendersValuesAsPythonStr) {
  EXPECT_EQ(render(R"({{ 1 }} {{ 2.5 }} {{ 'a' }} {{ true }} {{ none }} {{ [1, 'b', none] }} )"
                   R"({{ {'k': 1} }} {{ (1,) }} {{ (1, 2) }} {{ 'it\'s' ~ ["it's"] }} {{ -0.0 }})"),
            R"(1 2.5 a True None [1, 'b', None] {'k': 1} (1,) (1, 2) it's["it's"] -0.0)");
}

TEST(ChatTemplate, ArithmeticFollowsPython) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} "
                   "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 'a' ~ 1 ~ none }} {{ 2 ** -1 }} "
                   "{{ 7.5 // 2 }} {{ -1 - -1 }} {{ - 2 | abs }} {{ 'ab' * 2 }} {{ [1] + [2] }}"),
            "3 -4 2 3.5 1024 7 9 a1None 0.5 3.0 0 2 abab [1, 2]");
}

TEST(ChatTemplate, FloatsPrintAsPythonRepr) {
  EXPECT_EQ(render("{{ 0.1 + 0.2 }} {{ 1e-5 }} {{ 1e16 }} {{ 1.0 }} {{ 10 / 4 }} "
                   "{{ 123456789.125 }} {{ 1e15 }} {{ 0.0001 }} {{ 1_000 }}"),
            "0.30000000000000004 1e-05 1e+16 1.0 2.5 123456789.125 1000000000000000.0 0.0001 "
            "1000");
}

TEST(ChatTemplate, ComparisonsChainAndMembershipWorks) {
  EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'b' in 'abc' }} {{ 'x' not in ['a'] }} "
                   "{{ 'k' in {'k': 1} }} {{ 1 == 1.0 }} {{ [1, 2] < [1, 3] }} {{ 'a' < 'b' }}"),
            "True False True True True True True True");
}

TEST(ChatTemplate, LogicalOperatorsReturnOperandsAndTernaryMayOmitElse) {
  EXPECT_EQ(render("{{ '' or 'x' }} {{ 'a' and 'b' }} {{ not [] }} {{ 0 or none }} "
                   "[{{ 'a' if false }}] {{ 'a' if true else 'b' }} "
                   "{{ 1 if false else 2 if false else 3 }}"),
            "x b True None [] a 3");
}

TEST(ChatTemplate, AttributesAndSubscriptsReachMessageFields) {
  EXPECT_EQ(render("{{ messages[0]['role'] }} {{ messages[0].role }} {{ messages[-1].content }} "
                   "{{ messages.1.role }} {{ messages[0]['items'] is defined }}"),
            "user user Hello assistant True");
}

TEST(ChatTemplate, StringsIndexAndSliceByCharacter) {
  EXPECT_EQ(render("{{ 'héllo'[::-1] }} {{ [1,2,3,4][1:3] }} {{ 'abc'[-2:] }} {{ 'héllo'[1] }} "
                   "{{ 'héllo' | length }} {{ [1,2,3][::-2] }}"),
            "olléh [2, 3] bc é 5 [3, 1]");
}

TEST(ChatTemplate, StringLiteralsDecodeAsPython) {
  EXPECT_EQ(render(R"({{ 'a' 'b' }} {{ "x\ty" }} {{ 'a\qb' }} {{ '\x41\u00e9\101' }})"),
            "ab x\ty a\\qb AéA");
}

TEST(ChatTemplate, StringMethodsFollowPython) {
  EXPECT_EQ(render("{{ 'a,b'.startswith(('x', 'a')) }} {{ 'ab'.endswith('b') }} "
                   "{{ '--x--'.strip('-') }} {{ '  x '.lstrip() }}| {{ 'x\n\n'.rstrip('\n') }} "
                   "{{ 'a b  c'.split() }} {{ 'a,b,c'.split(',', 1) }} "
                   "{{ 'a,b,c'.rsplit(',', 1) }} {{ 'aaa'.replace('a', 'b', 2) }} "
                   "{{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} "
                   "{{ '-'.join(['a', 'b']) }} {{ 'abc'.find('c') }} {{ 'Hi'.upper() }}"
                   "{{ 'Hi'.lower() }}"),
            "True True x x | x ['a', 'b', 'c'] ['a', 'b,c'] ['a,b', 'c'] bba Hello World Hello "
            "a-b 2 HIhi");
}

TEST(ChatTemplate, DictMethodsKeepInsertionOrder) {
  EXPECT_EQ(render("{% set d = {'b': 1, 'a': [1, 2]} %}{{ d.items() | list }} "
                   "{{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} "
                   "{{ d.get('z') }} {{ d.get('z', 0) }} "
                   "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}"),
            "[('b', 1), ('a', [1, 2])] ['b', 'a'] [1, [1, 2]] [1, 2] None 0 b=1;a=[1, 2];");
}

// ---- filters and tests ----

TEST(ChatTemplate, FiltersFollowJinja2) {
  EXPECT_EQ(render("[{{ ' x ' | trim }}] {{ [1, 2] | length }} {{ 'AbC' | lower }}"
                   "{{ 'AbC' | upper }} {{ nope | default('d') }} {{ '' | default('e', true) }} "
                   "{{ [3, 4] | first }}{{ [3, 4] | last }} {{ [1, 2] | join('-') }} "
                   "{{ 'ab' | list }} {{ 12 | string }} {{ '42' | int }} {{ '4.7' | int }} "
                   "{{ 'x' | int }} {{ {'a': 1} | items | list }} {{ 'hELLO wORLD' | capitalize }} "
                   "{{ 'hello-world x' | title }} {{ 'aXbX' | replace('X', '') }} "
                   "{{ [1, 2, 3] | reverse | list }} {{ -3 | abs }} {{ '2.5' | float }} "
                   "{{ [1, 2, 3, 4] | select('odd') | list }} "
                   "{{ [1, 2, 3, 4] | reject('odd') | list }}"),
            "[x] 2 abcABC d e 34 1-2 ['a', 'b'] 12 42 4 0 [('a', 1)] Hello world Hello-World X "
            "ab [3, 2, 1] 3 2.5 [1, 3] [2, 4]");
}

TEST(ChatTemplate, AttributeFiltersSelectAndMapMessages) {
  EXPECT_EQ(render("{{ messages | selectattr('role', 'equalto', 'user') | "
                   "map(attribute='content') | list }} "
                   "{{ messages | rejectattr('role', 'equalto', 'user') | map(attribute='role') | "
                   "join }} {{ ['a', 'B', 'b', 'A'] | unique | list }} "
                   "{{ ['a', 'b'] | map('upper') | list }} {{ 'a\nb\n\nc' | indent(2) }} "
                   "{{ 'a\nb' | indent(2, true) }} "
                   "{{ messages | map(attribute='nope', default='-') | join }}"),
            "['Hi'] assistant ['a', 'B'] ['A', 'B'] a\n  b\n\n  c   a\n  b --");
}

TEST(ChatTemplate, SortIsStableAndCaseInsensitiveByDefault) {
  EXPECT_EQ(render("{{ ['b', 'A', 'a', 'C'] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} "
                   "{{ messages | sort(attribute='content') | map(attribute='role') | list }} "
                   "{{ ['b', 'A', 'a'] | sort(case_sensitive=true) }}"),
            "['A', 'a', 'b', 'C'] [3, 2, 1] ['assistant', 'user'] ['A', 'a', 'b']");
  EXPECT_EQ(render_error("{{ [1, 'a'] | sort }}"),
            "tpl line 1: '<' not supported between instances of 'str' and 'int'");
}

TEST(ChatTemplate, SelectAndMapOfAFalsyValueAreEmpty) {
  EXPECT_EQ(render("{{ none | selectattr('role') | list }} {{ 0 | map('upper') | list }}"),
            "[] []");
}

TEST(ChatTemplate, StrftimeNowFormatsTheCurrentTime) {
  EXPECT_EQ(render("{{ strftime_now('%%') }} {{ strftime_now('%Y') | length }}"), "% 4");
}

TEST(ChatTemplate, TojsonIsPythonJsonDumps) {
  EXPECT_EQ(render(R"({{ {'b': [1, 'é'], 'a': none, 'c': true} | tojson }} )"
                   R"({{ {'b': 1, 'a': {}} | tojson(indent=2) }} )"
                   R"({{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }} )"
                   R"({{ [1, 2] | tojson(separators=(',', ':')) }} )"
                   R"({{ 'é"\\' ~ '\n\x01' | tojson }} {{ 'é😀' | tojson(ensure_ascii=true) }} )"
                   R"({{ 2.50 | tojson }})"),
            "{\"b\": [1, \"é\"], \"a\": null, \"c\": true} {\n  \"b\": 1,\n  \"a\": {}\n} "
            "{\"a\": 2, \"b\": 1} [1,2] é\"\\\"\\n\\u0001\" \"\\u00e9\\ud83d\\ude00\" 2.5");
}

TEST(ChatTemplate, TojsonKeepsTheKeyOrderOfTheInput) {
  ChatContext context;
  context.extra["tools"] = ordered_json::parse(R"([{"name": "f", "description": "d", "a": 1}])");
  EXPECT_EQ(render("{{ tools[0] | tojson }}", kTwoTurns, context),
            R"({"name": "f", "description": "d", "a": 1})");
}

TEST(ChatTemplate, TestsFollowPythonTypes) {
  EXPECT_EQ(render("{{ x is defined }} {{ none is not none }} {{ 's' is string }} "
                   "{{ {} is mapping }} {{ {} is iterable }} {{ 3 is iterable }} "
                   "{{ true is number }} {{ 1.5 is number }} {{ true is boolean }} "
                   "{{ 1 is boolean }} {{ 'a' is sequence }} {{ 9 is divisibleby 3 }} "
                   "{{ 2 is odd }} {{ 2 is even }} {{ 'a' is in ['a'] }} {{ 1 is equalto 1.0 }} "
                   "{{ 3 is gt 2 }} {{ 1 is integer }} {{ true is integer }} "
                   "{{ x is undefined }} {{ 'abc' is lower }}"),
            "False False True True True False True True True False True True False True True "
            "True True True False True True");
}

// ---- undefined ----

TEST(ChatTemplate, UndefinedIsFalsyEmptyAndIterable) {
  EXPECT_EQ(render("[{{ nope }}]{{ 'no' if not nope }}{{ nope | length }}{{ nope is defined }}"
                   "{{ nope ~ 'x' }}{% for x in nope %}never{% endfor %}"
                   "{{ messages[0].missing is defined }}"),
            "[]no0FalsexFalse");
}

TEST(ChatTemplate, AttributeOfUndefinedIsAnError) {
  EXPECT_EQ(render_error("line one\n{{ nope.attr }}"), "tpl line 2: 'nope' is undefined");
  EXPECT_EQ(render_error("{{ messages[0].missing.deeper }}"),
            "tpl line 1: 'dict object' has no attribute 'missing'");
  EXPECT_EQ(render_error("{{ messages[5].role }}"), "tpl line 1: list object has no element 5");
  EXPECT_EQ(render_error("{{ nope + 1 }}"), "tpl line 1: 'nope' is undefined");
}

// ---- whitespace ----

TEST(ChatTemplate, TrimBlocksAndLstripBlocksAsTransformersSetsThem) {
  EXPECT_EQ(render("{% if true %}\n    hi\n{% endif %}\n"), "    hi\n");
  EXPECT_EQ(render("  {% if true %}\n  x\n  {% endif %}\nend"), "  x\nend");
  EXPECT_EQ(render("a\n  {# note #}\nb"), "a\nb");
}

TEST(ChatTemplate, DashStripsWhitespaceOnEitherSide) {
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("a {{- ' b ' -}} c"), "a b c");
  EXPECT_EQ(render("a {#- note -#} b"), "ab");
}

TEST(ChatTemplate, PlusKeepsWhitespaceAroundABlock) {
  EXPECT_EQ(render("  {%+ if true %}x{% endif +%}\ny"), "  x\ny");
}

TEST(ChatTemplate, NewlinesNormaliseAndOneTrailingNewlineIsDropped) {
  EXPECT_EQ(render("line\r\nnext\rlast\n"), "line\nnext\nlast");
  EXPECT_EQ(render("x\n\n"), "x\n");
}

// ---- loops, scopes, namespace ----

TEST(ChatTemplate, LoopVariablesDescribeTheIteration) {
  EXPECT_EQ(render("{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                   "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}"
                   "{{ loop.previtem is defined }}"
                   "{{ loop.nextitem.role if loop.nextitem is defined }}"
                   "{{ loop.cycle('a','b') }};{% endfor %}"),
            "1021TrueFalse2Falseassistanta;2110FalseTrue2Trueb;");
}

TEST(ChatTemplate, LoopFilterCountsOnlyTheItemsItKeeps) {
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4, 5] if x is odd %}{{ x }}"
                   "{{ '/' if loop.last else ',' }}{{ loop.length }} {% endfor %}"),
            "1,3 3,3 5/3 ");
}

TEST(ChatTemplate, BreakContinueAndElse) {
  EXPECT_EQ(render("{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}"
                   "{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}"
                   "{% for x in [] %}no{% else %}empty{% endfor %}"),
            "023empty");
}

TEST(ChatTemplate, SetInsideALoopLastsOneIteration) {
  EXPECT_EQ(render("{% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}"
                   "{% endfor %}{{ x }}"),
            "01020");
}

TEST(ChatTemplate, NamespaceCarriesStateOutOfLoops) {
  EXPECT_EQ(render("{% set ns = namespace(count=0, names=[]) %}{% for m in messages %}"
                   "{% set ns.count = ns.count + 1 %}{% set ns.names = ns.names + [m.role] %}"
                   "{% endfor %}{{ ns.count }} {{ ns.names }}"),
            "2 ['user', 'assistant']");
  EXPECT_EQ(render_error("{% set x = 1 %}{% set x.y = 2 %}"),
            "tpl line 1: cannot assign attribute on non-namespace object");
}

TEST(ChatTemplate, BlockSetCapturesItsBody) {
  EXPECT_EQ(render("{% set block %} a {{ 1 + 1 }} {% endset %}[{{ block }}]"), "[ a 2 ]");
}

TEST(ChatTemplate, GenerationTagRendersItsBody) {
  EXPECT_EQ(render("{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}"
                   "{% endfor %}"),
            "HiHello");
}

// ---- the variables apply_chat_template passes ----

TEST(ChatTemplate, PassesTheVariablesOfApplyChatTemplate) {
  ChatContext context;
  context.eos_token = "</s>";
  context.add_generation_prompt = true;
  context.extra["enable_thinking"] = false;
  EXPECT_EQ(render("{{ bos_token is defined }} {{ eos_token }} {{ add_generation_prompt }} "
                   "{{ tools is none }} {{ documents is none }} {{ enable_thinking is false }} "
                   "{{ messages | length }}",
                   kTwoTurns, context),
            "False </s> True True True True 2");
}

TEST(ChatTemplate, BuiltinChatmlIsAutoTrainsFormat) {
  ChatContext context = ChatTemplate::builtin_context("chatml");
  context.add_generation_prompt = true;
  EXPECT_EQ(ChatTemplate::builtin("chatml").render(kTwoTurns, context),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, BuiltinZephyrIsAutoTrainsFormat) {
  const ChatContext context = ChatTemplate::builtin_context("zephyr");
  EXPECT_EQ(ChatTemplate::builtin("zephyr").render(kTwoTurns, context),
            "<|user|>\nHi</s>\n<|assistant|>\nHello</s>\n");
}

TEST(ChatTemplate, UnknownBuiltinSuggestsTheClosestName) {
  EXPECT_EQ(error_of([] { ChatTemplate::builtin("chatm"); }),
            "unknown chat template \"chatm\" (did you mean 'chatml'?); built-in formats: chatml, "
            "zephyr");
}

TEST(ChatTemplate, MessagesMustBeAJsonArray) {
  EXPECT_EQ(error_of([] { render("x", ordered_json::object()); }),
            "tpl: the messages must be a JSON array, got object");
}

// ---- errors: each names the origin, the line and the construct ----

TEST(ChatTemplate, UnsupportedTagNamesItsLine) {
  EXPECT_EQ(render_error("{% if true %}\n{% macro f() %}{% endmacro %}{% endif %}"),
            "tpl line 2: the \"macro\" tag is not supported (supported: if, elif, else, for, set, "
            "break, continue, generation)");
  EXPECT_EQ(render_error("{% frobnicate %}"),
            "tpl line 1: unknown tag \"frobnicate\" (supported: if, elif, else, for, set, break, "
            "continue, generation)");
  EXPECT_EQ(render_error("{% for x in y recursive %}{% endfor %}"),
            "tpl line 1: recursive for loops are not supported");
}

TEST(ChatTemplate, UnsupportedFilterTestAndMethodAreNamed) {
  EXPECT_PRED2(starts_with, render_error("\n{{ x | wordwrap }}"),
               "tpl line 2: the \"wordwrap\" filter is not supported (supported: abs, ");
  EXPECT_PRED2(starts_with, render_error("{{ x is frobbed }}"),
               "tpl line 1: the \"frobbed\" test is not supported (supported: boolean, ");
  EXPECT_PRED2(starts_with, render_error("{{ 'a {}'.format(1) }}"),
               "tpl line 1: the str method \"format\" is not supported (supported: ");
  EXPECT_EQ(render_error("{{ cycler() }}"),
            "tpl line 1: the global function \"cycler\" is not supported");
}

TEST(ChatTemplate, UnterminatedTagsAreErrorsAtTheirLine) {
  EXPECT_EQ(render_error("ab\n{{ x "),
            "tpl line 2: the \"{{\" opened here is not closed (missing \"}}\")");
  EXPECT_EQ(render_error("{% if x"),
            "tpl line 1: the \"{%\" opened here is not closed (missing \"%}\")");
  EXPECT_EQ(render_error("\n\n{# note"),
            "tpl line 3: the comment opened here is not closed (missing \"#}\")");
  EXPECT_EQ(render_error("{{ 'abc }}"), "tpl line 1: unterminated string literal");
  EXPECT_EQ(render_error("{% for m in messages %}\n{{ m }}"),
            "tpl line 1: the \"for\" block opened here is not closed (expected \"endfor\" or "
            "\"else\" before the end of the template)");
}

TEST(ChatTemplate, MisplacedTagsAreErrors) {
  EXPECT_EQ(render_error("{% if x %}\n{% endfor %}"),
            "tpl line 2: unexpected \"endfor\": the innermost open block is the \"if\" of line 1");
  EXPECT_EQ(render_error("{% endif %}"), "tpl line 1: unexpected \"endif\": no block is open");
  EXPECT_EQ(render_error("{% break %}"), "tpl line 1: \"break\" outside a for loop");
}

TEST(ChatTemplate, MalformedExpressionsAreErrors) {
  EXPECT_EQ(render_error("{{ }}"), "tpl line 1: expected an expression, got '}}'");
  EXPECT_EQ(render_error("{{ 1 + }}"), "tpl line 1: unexpected '}}'");
  EXPECT_EQ(render_error("{{ (1 }}"), "tpl line 1: unexpected '}', expected ')'");
  EXPECT_EQ(render_error("{{ a b }}"), "tpl line 1: expected '}}', got 'b'");
  EXPECT_EQ(render_error("{{ a ! b }}"), "tpl line 1: unexpected character '!' in a tag");
  EXPECT_EQ(render_error("{% set true = 1 %}"), "tpl line 1: can't assign to 'true'");
}

TEST(ChatTemplate, RaiseExceptionCarriesTheMessageAndLine) {
  EXPECT_EQ(render_error("\n\n{{ raise_exception('Roles must alternate user/assistant') }}"),
            "tpl line 3: the template raised an error: Roles must alternate user/assistant");
}

TEST(ChatTemplate, TypeErrorsAreWordedAsPython) {
  EXPECT_EQ(render_error("{{ 'a' + 1 }}"),
            "tpl line 1: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(render_error("{{ 1 / 0 }}"), "tpl line 1: division by zero");
  EXPECT_EQ(render_error("{{ '</think>' in none }}"),
            "tpl line 1: argument of type 'NoneType' is not iterable");
  EXPECT_EQ(render_error("{% for a, b in [[1]] %}{% endfor %}"),
            "tpl line 1: not enough values to unpack (expected 2, got 1)");
}

TEST(ChatTemplate, SlicesAndKeysFailAsPythonDoes) {
  EXPECT_EQ(render_error("{{ messages[0][1:] }}"), "tpl line 1: unhashable type: 'slice'");
  EXPECT_EQ(render_error("{{ 5[::-1] }}"), "tpl line 1: 'int' object is not subscriptable");
  EXPECT_EQ(render_error("{{ [1] in messages[0] }}"), "tpl line 1: unhashable type: 'list'");
}

TEST(ChatTemplate, NonAsciiCaseMappingIsRefusedRatherThanGuessed) {
  EXPECT_EQ(render_error("{{ 'é' | upper }}"),
            "tpl line 1: upper() of text with non-ASCII letters is not supported (case mapping is "
            "ASCII only)");
  EXPECT_EQ(render("{{ '日本 ok' | length }} {{ '→ x' | upper }}"), "5 → X");
}

// ---- malformed templates never crash or hang ----

TEST(ChatTemplate, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string parens = "{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}";
  EXPECT_EQ(render_error(parens), "tpl line 1: an expression nested more than 128 levels deep");
  std::string sum = "{{ 1";
  for (int i = 0; i < 10000; ++i) sum += " + 1";
  EXPECT_EQ(render_error(sum + " }}"),
            "tpl line 1: an expression nested more than 128 levels deep");
  std::string ifs;
  for (int i = 0; i < 1000; ++i) ifs += "{% if true %}";
  EXPECT_EQ(render_error(ifs), "tpl line 1: blocks nested more than 128 levels deep");
}

// Runaway loops, strings and outputs: chat_template_budget_test.cpp.
TEST(ChatTemplate, RangeLongerThanTheSandboxAllowsIsAnError) {
  EXPECT_EQ(render_error("{{ range(1000000) }}"),
            "tpl line 1: range too big: the sandbox allows at most 100000 items");
}

TEST(ChatTemplate, EveryPrefixOfATemplateParsesOrFailsCleanly) {
  const std::string source =
      "{%- set ns = namespace(n=0) %}{# c #}\n"
      "{%- for m in messages if m.role != 'x' %}\n"
      "  {%- set ns.n = ns.n + 1 -%}\n"
      "  {{ '<|' ~ m['role'] ~ \"|>\\n\" + m.content | trim }}{{ (m.content.split(' ')[::-1] "
      "| join(',')) if loop.last else {'a': [1, 2.5]} | tojson(indent=2) }}\n"
      "{%- else %}none{% endfor %}{{ ns.n is odd }}";
  std::mt19937 random(7);
  for (size_t length = 0; length <= source.size(); ++length) {
    std::string text = source.substr(0, length);
    for (int mutation = 0; mutation < 4; ++mutation) {
      if (!text.empty() && mutation > 0)
        text[random() % text.size()] = source[random() % source.size()];
      try {
        render(text);
      } catch (const Error& e) {
        EXPECT_PRED2(starts_with, e.what(), "tpl line ") << text;
      }
    }
  }
}

}  // namespace
}  // namespace autotrain::data::chat_template_test
