#include "autotrain/config/command_line.hpp"

#include <boost/program_options.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::config {

namespace {

namespace po = boost::program_options;

// The train subcommand's own options (not parameters). Each is also accepted in snake case.
struct OwnOption {
  std::string_view name;
  bool takes_value;
  std::string_view help;
};

constexpr OwnOption kOwnOptions[] = {
    {"config", true, "YAML config in AutoTrain's layout (task, base_model, data, params, ...)"},
    {"training-config", true, "training_params.json of an earlier run (a flat JSON object)"},
    {"dry-run", false,
     "resolve and validate, check the data and the checkpoint a resume would take, print the "
     "plan (topology, data, resume, every parameter with its source), and stop"},
    {"allow-changed-params", false,
     "on resume, accept changed optimisation parameters (lr, scheduler, ...): each change is "
     "recorded in the project's param_changes.jsonl at the step it takes effect"},
    {"help", false, "print this help"},
};

po::options_description build_options() {
  po::options_description options;
  auto add = [&](const std::string& name, bool takes_value, bool boolean) {
    if (!takes_value) {
      options.add_options()(name.c_str(), "");
    } else if (boolean) {
      // A bare --flag means true; --flag false switches a default of true off.
      options.add_options()(name.c_str(), po::value<std::string>()->implicit_value("true"), "");
    } else {
      options.add_options()(name.c_str(), po::value<std::string>(), "");
    }
  };
  for (const auto& own : kOwnOptions) {
    add(own.name == "help" ? "help,h" : std::string(own.name), own.takes_value, false);
    if (own.name.find('-') != std::string_view::npos) {
      add(to_snake_case(own.name), own.takes_value, false);
    }
  }
  for (const auto& spec : param_specs()) {
    const bool boolean = spec.type() == ParamType::boolean;
    add(to_kebab_case(spec.name), true, boolean);
    if (spec.name.find('_') != std::string_view::npos) add(std::string(spec.name), true, boolean);
  }
  // AutoTrain's flags without a parameter here: the parameters' reader notes or refuses them.
  for (const std::string_view name : foreign_key_names()) {
    add(to_kebab_case(name), true, true);
    if (name.find('_') != std::string_view::npos) add(std::string(name), true, true);
  }
  return options;
}

std::vector<std::string> option_spellings() {
  std::vector<std::string> names;
  for (const auto& own : kOwnOptions) names.push_back(cat("--", own.name));
  for (const auto& spec : param_specs()) names.push_back("--" + to_kebab_case(spec.name));
  return names;
}

}  // namespace

TrainCommandLine parse_train_command_line(const std::vector<std::string>& args) {
  const po::options_description options = build_options();
  po::parsed_options parsed(&options);
  try {
    parsed =
        po::command_line_parser(args)
            .options(options)
            .style(po::command_line_style::unix_style & ~po::command_line_style::allow_guessing)
            .run();
  } catch (const po::unknown_option& error) {
    const std::string name = error.get_option_name();
    const std::string hint = foreign_name_hint(name);
    throw Error(cat("train: unknown option '", name, "'",
                    hint.empty() ? did_you_mean(name, option_spellings()) : hint,
                    "; see autotrain train --help"));
  } catch (const po::error& error) {
    throw Error(cat("train: ", error.what(), "; see autotrain train --help"));
  }

  TrainCommandLine command_line;
  bool seen_config = false;
  bool seen_training_config = false;
  for (const auto& option : parsed.options) {
    if (option.position_key >= 0 || option.string_key.empty()) {
      throw Error(cat("train: unexpected argument '", join(option.original_tokens, " "),
                      "'; parameters are given as --name value (see autotrain train --help)"));
    }
    const std::string key = to_kebab_case(option.string_key);
    const std::string spelling = "--" + option.string_key;
    const std::string value = option.value.empty() ? "true" : option.value.front();
    auto once = [&](bool& seen) {
      if (seen) throw Error(cat("train: ", spelling, " is given twice; give it once"));
      seen = true;
    };
    if (key == "config") {
      once(seen_config);
      command_line.config = value;
    } else if (key == "training-config") {
      once(seen_training_config);
      command_line.training_config = value;
    } else if (key == "dry-run") {
      command_line.dry_run = true;
    } else if (key == "allow-changed-params") {
      command_line.allow_changed_params = true;
    } else if (key == "help") {
      command_line.help = true;
    } else {
      command_line.flags.push_back({to_snake_case(option.string_key), spelling, value});
    }
  }
  return command_line;
}

std::string train_help_text() {
  const TrainingParams defaults;
  std::string out =
      "usage: autotrain train [--config FILE.yaml] [--training-config training_params.json]\n"
      "                       [--dry-run] [--allow-changed-params] [--<parameter> VALUE ...]\n\n"
      "Precedence: --<parameter> flags > --config YAML > --training-config JSON > defaults.\n"
      "Every parameter is accepted in kebab case and snake case (--batch-size, --batch_size).\n"
      "Booleans take true|false; a bare flag means true.\n\noptions:\n";
  for (const auto& own : kOwnOptions) {
    out += cat("  --", own.name, own.takes_value ? " FILE" : "", "\n      ", own.help, "\n");
  }
  out += "\nparameters (docs/configuration.md explains each one):\n";
  for (const auto& spec : param_specs()) {
    out += cat("  --", to_kebab_case(spec.name), " <", type_name(spec.type()), ">  (default ",
               format_value(get_value(defaults, spec)));
    const std::string allowed = spec.constraint.describe();
    if (allowed != "any") out += cat("; ", allowed);
    out += cat(")\n      ", spec.doc, "\n");
  }
  return out;
}

namespace {

// Doc lines mention <project_name> and a|b; in a Markdown table both must be escaped.
std::string markdown_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|' || c == '<') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string params_markdown_table() {
  const TrainingParams defaults;
  std::string out =
      "| Parameter | Type | Default | Allowed | Meaning |\n"
      "|---|---|---|---|---|\n";
  for (const auto& spec : param_specs()) {
    const Constraint& constraint = spec.constraint;
    std::string allowed;
    if (!constraint.choices.empty()) {
      std::vector<std::string> shown;
      for (const auto& choice : constraint.choices) {
        shown.push_back(choice.empty() ? "`\"\"`" : cat("`", choice, "`"));
      }
      allowed = join(shown, ", ");
      if (!constraint.aliases.empty()) {
        std::vector<std::string> aliases;
        for (const auto& [alias, choice] : constraint.aliases) {
          if (!alias.empty()) aliases.push_back(cat("`", alias, "`"));
        }
        if (!aliases.empty()) allowed += cat(" (also ", join(aliases, ", "), ")");
      }
    } else {
      allowed = constraint.describe();
      if (allowed == "any") allowed = "";
    }
    out += cat("| `", spec.name, "` | ", type_name(spec.type()), " | `",
               format_value(get_value(defaults, spec)), "` | ", allowed, " | ",
               markdown_escape(spec.doc), " |\n");
  }
  return out;
}

}  // namespace autotrain::config
