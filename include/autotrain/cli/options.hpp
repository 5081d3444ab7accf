#pragma once
// The one place subcommands turn their argument lists into Boost.Program_options values, so
// every command reports a bad flag the same way: the flag, the closest valid one, and where
// to look ("see autotrain <command> --help").
#include <boost/program_options.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::cli {

// Parses `args` against `description` (no abbreviations: a flag is spelled out). An unknown
// flag, a missing value or a bad value is a CollectiveError (every rank parses the same
// arguments) naming the flag, suggesting the closest one.
// `positional` names the options that bare words fill, in order (e.g. `ckpt inspect FILE`).
boost::program_options::variables_map parse_command_options(
    std::string_view command, const boost::program_options::options_description& description,
    const std::vector<std::string>& args,
    const boost::program_options::positional_options_description& positional = {});

}  // namespace autotrain::cli
