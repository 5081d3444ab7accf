#include "preference_rows.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::data {
namespace {

using OrderedJson = nlohmann::ordered_json;

bool blank(const OrderedJson& value) {
  return value.is_null() || (value.is_string() && value.get_ref<const std::string&>().empty());
}

// Where a value is, for errors: "data/train.jsonl:3: column 'chosen' (text_column)".
std::string column_at(const std::string& where, const std::string& column,
                      std::string_view parameter) {
  return cat(where, ": column '", column, "' (", parameter, ")");
}

std::string plain_text(OrderedJson&& value, const std::string& at) {
  AT_CHECK(!value.is_array(), at,
           " holds a list (of messages?): set chat_template (tokenizer, chatml or zephyr) to "
           "render conversations, or give the text as a string");
  AT_CHECK(value.is_string(), at, " is ", value.is_null() ? "null" : value.type_name(),
           ", expected a string");
  return std::move(value.get_ref<std::string&>());
}

// AutoTrain inserts an empty system message before zephyr conversations that have none.
void add_zephyr_system(OrderedJson& messages, const PreferenceOptions& options) {
  if (options.prepare.chat_template != "zephyr") return;
  if (!messages.empty() && messages.front().value("role", "") == "system") return;
  messages.insert(messages.begin(), OrderedJson{{"role", "system"}, {"content", ""}});
}

std::string render(const ChatFormatter& chat, const OrderedJson& messages, const std::string& at) {
  if (messages.empty()) return {};
  return chat.render(messages, false, at).front().text;
}

PairText chat_pair(PairRow&& row, const ChatFormatter& chat, const PreferenceOptions& options) {
  const std::string chosen_at = column_at(row.where, options.prepare.text_column, "text_column");
  const std::string rejected_at =
      column_at(row.where, options.rejected_column, "rejected_text_column");
  OrderedJson chosen = conversation_of(std::move(row.chosen), chosen_at);
  OrderedJson rejected = conversation_of(std::move(row.rejected), rejected_at);
  if (options.reward) {
    add_zephyr_system(chosen, options);
    add_zephyr_system(rejected, options);
    return {"", render(chat, chosen, chosen_at), render(chat, rejected, rejected_at)};
  }
  // TRL's explicit-prompt layout (a prompt column of messages) comes before chosen's turns;
  // AutoTrain's own rule takes the prompt from chosen alone.
  OrderedJson prompt =
      row.prompt.is_array()
          ? conversation_of(std::move(row.prompt),
                            column_at(row.where, options.prompt_column, "prompt_text_column"))
          : OrderedJson::array();
  for (size_t i = 0; i + 1 < chosen.size(); ++i) prompt.push_back(chosen[i]);
  add_zephyr_system(prompt, options);
  return {render(chat, prompt, row.where),
          render(chat, OrderedJson::array({chosen.back()}), chosen_at),
          render(chat, OrderedJson::array({rejected.back()}), rejected_at)};
}

}  // namespace

void read_pair_rows(const InputFile& file, const PreferenceOptions& options,
                    const std::function<void(PairRow&&)>& sink) {
  std::vector<Column> columns = {{options.prepare.text_column, "text_column"},
                                 {options.rejected_column, "rejected_text_column"}};
  // The prompt: none in reward mode; with a chat template AutoTrain takes it from chosen, and a
  // prompt column is read only when present.
  const bool prompt = !options.reward;
  if (prompt) {
    columns.insert(columns.begin(), Column{options.prompt_column, "prompt_text_column",
                                           options.prepare.chat_template.empty()});
  }
  read_records(file, columns, [&](std::vector<OrderedJson>&& values, size_t line) {
    if (std::all_of(values.begin(), values.end(), blank)) return;
    PairRow row;
    row.where = cat(file.path.string(), ":", line);
    row.rejected = std::move(values.back());
    row.chosen = std::move(values[values.size() - 2]);
    if (prompt) row.prompt = std::move(values.front());
    sink(std::move(row));
  });
}

PairText pair_text(PairRow&& row, const ChatFormatter* chat, const PreferenceOptions& options) {
  if (chat != nullptr) return chat_pair(std::move(row), *chat, options);
  PairText text;
  if (!options.reward) {
    text.prompt = plain_text(std::move(row.prompt),
                             column_at(row.where, options.prompt_column, "prompt_text_column"));
  }
  text.chosen = plain_text(std::move(row.chosen),
                           column_at(row.where, options.prepare.text_column, "text_column"));
  text.rejected = plain_text(std::move(row.rejected),
                             column_at(row.where, options.rejected_column, "rejected_text_column"));
  return text;
}

}  // namespace autotrain::data
