#include "autotrain/cli/options.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::cli {

namespace po = boost::program_options;

po::variables_map parse_command_options(std::string_view command,
                                        const po::options_description& description,
                                        const std::vector<std::string>& args,
                                        const po::positional_options_description& positional) {
  po::variables_map values;
  try {
    po::store(
        po::command_line_parser(args)
            .options(description)
            .positional(positional)
            .style(po::command_line_style::unix_style & ~po::command_line_style::allow_guessing)
            .run(),
        values);
    po::notify(values);
  } catch (const po::unknown_option& error) {
    std::vector<std::string> flags;
    for (const auto& option : description.options()) flags.push_back("--" + option->long_name());
    throw UsageError(cat(command, ": unknown option '", error.get_option_name(), "'",
                         did_you_mean(error.get_option_name(), flags), "; see autotrain ", command,
                         " --help"));
  } catch (const po::error& error) {
    throw UsageError(cat(command, ": ", error.what(), "; see autotrain ", command, " --help"));
  }
  return values;
}

}  // namespace autotrain::cli
