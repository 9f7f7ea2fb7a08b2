// rtf inspect: check GGUF files against the layout of their family (tensor names, shapes,
// types, metadata keys). Exit 0 pass, 2 layout problems found, 1 usage error.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "models/gguf/gguf-file.h"
#include "models/gguf/layout-check.h"

namespace rtf::cli {

namespace {

struct InspectCliOptions {
    std::string path, json;
    bool quiet = false;
    bool tensors = false;
};

// Every tensor of a readable file: name, type, shape, bytes (what a bandwidth or
// memory estimate needs, e.g. the bytes one decode step reads). null if unreadable.
nlohmann::json tensor_list(const std::string &path) {
    try {
        gguf::GgufFile f(path);
        auto a = nlohmann::json::array();
        for (const auto &t : f.tensors())
            a.push_back({{"name", t.name}, {"type", ggml_type_name(t.type)}, {"shape", gguf::format_shape(t.ne, t.n_dims)},
                         {"bytes", t.nbytes}});
        return a;
    } catch (const std::exception &) {
        return nullptr;  // its problems are in the report already
    }
}

int run_inspect(const InspectCliOptions &c) {
    const auto rep = gguf::inspect_path(c.path);
    if (!c.json.empty()) {
        nlohmann::json j = gguf::to_json(rep);
        if (c.tensors)
            for (size_t i = 0; i < rep.files.size() && i < j["files"].size(); ++i)
                j["files"][i]["tensors"] = tensor_list(rep.files[i].path);
        write_json(j, c.json);
    }
    if (c.json != "-") {
        for (const auto &f : rep.files) {
            if (f.skipped) {
                std::cout << "skip  " << f.path << "  (architecture '" << f.architecture
                          << "': not a file of the minicpmo45 family)\n";
                continue;
            }
            if (f.derived && f.problems.empty()) {
                std::cout << "cache " << f.path << "  (derived by rtfkit, not a model file; " << f.n_tensors << " tensors, "
                          << human_bytes(static_cast<double>(f.bytes)) << ")\n";
                continue;
            }
            std::cout << (f.problems.empty() ? "ok    " : "FAIL  ") << f.path << "  [" << (f.role.empty() ? "?" : f.role)
                      << ", " << f.n_tensors << " tensors, " << human_bytes(static_cast<double>(f.bytes)) << "]\n";
            if (!c.quiet)
                for (const auto &p : f.problems) std::cout << "      " << p.message() << "\n";
            if (c.tensors) {
                const auto ts = tensor_list(f.path);
                if (ts.is_array())
                    for (const auto &t : ts)
                        std::cout << "      " << t["name"].get<std::string>() << "  " << t["type"].get<std::string>() << "  "
                                  << t["shape"].get<std::string>() << "  " << t["bytes"].get<uint64_t>() << " B\n";
            }
        }
        for (const auto &p : rep.kit_problems) std::cout << "FAIL  " << p.message() << "\n";
        const size_t n = rep.n_problems();
        std::cout << (n == 0 ? "pass" : "fail") << ": " << rep.files.size() << " file(s), " << n << " problem(s)\n";
    }
    return rep.n_problems() == 0 ? 0 : 2;
}

}  // namespace

static void add_inspect_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand("inspect", "Check GGUF files (one file or a kit directory) against their family's "
                                              "layout: missing/extra tensors, shapes, types, metadata keys, truncation. "
                                              "Exit 0 pass, 2 problems found, 1 usage error");
    auto c = std::make_shared<InspectCliOptions>();
    sub->add_option("path", c->path, "A GGUF file or a directory (searched two levels deep for *.gguf)")->required();
    sub->add_option("--json", c->json, "Write the report as JSON to this file ('-' = stdout only)");
    sub->add_flag("--quiet", c->quiet, "List files only, not each problem");
    sub->add_flag("--tensors", c->tensors, "Also list every tensor (name, type, shape, bytes), in the text and the JSON");
    sub->callback([&action, c] { action = [c] { return run_inspect(*c); }; });
}

RTF_COMMAND(95, add_inspect_command);

}  // namespace rtf::cli
