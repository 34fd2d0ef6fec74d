#include "command_options.h"

namespace scellis::cli {

void AddServiceCommands(CommandOptions& options) {
  Invocation& inv = options.inv();
  CLI::App* probe = options.Subcommand(
      Command::kProbe, "probe", "show the WebGPU adapter, its limits, and what auto would choose");
  probe->add_flag("--json", inv.probe_json, "machine-readable output");

  CLI::App* conform = options.Subcommand(
      Command::kConform, "conform",
      "check every GPU kernel against the CPU reference; passing mints receipts");
  TypedFlags& conform_typed = options.Typed(conform);
  conform
      ->add_option("--ops", inv.conform.ops,
                   "only these ops (comma-separated; \"fused\" for fused chains)")
      ->delimiter(',');
  conform
      ->add_option("--tier", inv.conform.tier, "determinism tier: debug | prod | fast (required)")
      ->check(CLI::IsMember({"debug", "prod", "fast"}));
  conform->add_option("--backend", inv.conform.backend, "auto (a hardware GPU) | webgpu")
      ->check(CLI::IsMember({"auto", "webgpu"}));
  conform->add_flag("--allow-software-adapter", inv.conform.allow_software_adapter,
                    "accept a software WebGPU adapter (SwiftShader) for --backend=webgpu");
  conform_typed.Unsigned("--seed", &inv.conform.seed,
                         "seed of the generated data (printed on every run)");
  conform->add_flag("--json", inv.conform.json, "machine-readable output");
  conform->add_option("--doc", inv.conform.doc,
                      "a document defining ops of its own (its \"ops\" section): --ops may name "
                      "them; without --ops, all of them are checked");

  CLI::App* ops = options.Subcommand(Command::kOps, "ops", "list the ops this build has");
  ops->add_flag("--markdown", inv.ops.markdown, "print the reference of docs/ops.md");
  ops->add_flag("--json", inv.ops.json,
                "the table as JSON: every op's inputs, attributes, family, protocol version and "
                "guarantees (what the Python package and the browser runtime's tracer read)");

  CLI::App* studio = options.Subcommand(
      Command::kStudio, "studio",
      "serve the Studio: the canvas and a JSON API over the engine (loopback by default)");
  TypedFlags& studio_typed = options.Typed(studio);
  studio_typed.Integer("--port", &inv.studio.port, 0, 65535,
                       "TCP port (default 8737; 0 picks a free one and prints it)");
  studio->add_option("--host", inv.studio.host,
                     "address to listen on (default 127.0.0.1; anything else exposes the "
                     "engine to the network)");
  studio->add_flag("--open", inv.studio.open, "open the Studio in a browser (xdg-open)");
  studio->add_option("--store", inv.studio.store,
                     "content-addressed store for documents and run records (default: "
                     "$SCELLIS_STORE, else ~/.local/share/scellis/store)");
  studio->add_option("--backend", inv.studio.backend, "auto | webgpu | cpu")
      ->check(CLI::IsMember({"auto", "webgpu", "cpu"}));
  studio->add_flag("--allow-software-adapter", inv.studio.allow_software_adapter,
                   "accept a software WebGPU adapter (SwiftShader) for --backend=webgpu");
  studio->add_option("--web-dir", inv.studio.web_dir,
                     "the built Studio to serve (default: web/dist of this build's source tree)");
  studio_typed.Bytes("--max-request-bytes", &inv.studio.max_request_bytes,
                     "largest request body accepted (default 16M)");
}

}  // namespace scellis::cli
