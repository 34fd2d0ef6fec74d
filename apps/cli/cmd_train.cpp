// `scellis train`: runs a workflow's "train" section — batches from its dataset block, many steps
// per submission in a prepared session, a progress bar, test accuracy after each epoch, atomic
// checkpoints and bit-exact resume on the reference.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "runtime/backends/select.h"
#include "common.h"
#include "base/atomic_file.h"
#include "data/dataset.h"
#include "api/session.h"
#include "store/safetensors.h"
#include "webir/passes/append_train_step.h"

namespace scellis::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string Duration(double s) {
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s / 3600),
                  static_cast<int>(s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

// One line, redrawn in place on a terminal; every 10% as plain lines otherwise (logs, CI).
class Progress {
 public:
  Progress(int epoch, int epochs, int64_t total) : epoch_(epoch), epochs_(epochs), total_(total) {
    tty_ = isatty(STDERR_FILENO);
    start_ = Clock::now();
  }
  void Update(int64_t done, float loss) {
    double elapsed = Seconds(start_, Clock::now());
    double rate = elapsed > 0 ? done / elapsed : 0;
    double eta = rate > 0 ? (total_ - done) / rate : 0;
    int width = 30;
    int filled = static_cast<int>(width * done / std::max<int64_t>(total_, 1));
    char line[256];
    std::snprintf(line, sizeof line,
                  "epoch %d/%d [%s%s] step %lld/%lld  loss %.4f  %.0f steps/s  ETA %s", epoch_,
                  epochs_, std::string(filled, '#').c_str(),
                  std::string(width - filled, '.').c_str(), static_cast<long long>(done),
                  static_cast<long long>(total_), loss, rate, Duration(eta).c_str());
    if (tty_) {
      std::fprintf(stderr, "\r%s", line);
    } else if (done * 10 / std::max<int64_t>(total_, 1) != last_decile_ || done == total_) {
      last_decile_ = done * 10 / std::max<int64_t>(total_, 1);
      std::fprintf(stderr, "%s\n", line);
    }
  }
  void Finish() {
    if (tty_) std::fprintf(stderr, "\n");
  }

 private:
  int epoch_, epochs_;
  int64_t total_;
  bool tty_;
  int64_t last_decile_ = -1;
  Clock::time_point start_;
};

Status SaveState(api::Session& s, const std::vector<std::string>& names,
                 const std::string& path, const std::map<std::string, std::string>& meta) {
  std::vector<store::NamedTensor> tensors;
  for (const std::string& name : names) {
    SCELLIS_ASSIGN_OR_RETURN(runtime::HostTensor v, s.Download(name));
    tensors.push_back({name, "F32", v.type.sizes(),
                       std::string(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size())});
  }
  return store::SaveSafetensors(path, tensors, meta);
}

std::vector<std::string> StateNames(const api::Session& s) {
  // Every carried input: the params and their optimizer moments.
  std::vector<std::string> names;
  const webir::Graph& g = s.plan().graph();
  for (const webir::Carry& c : g.carries) names.push_back(runtime::FeedName(g.at(c.to)));
  return names;
}

}  // namespace

int TrainCommand(const CompileFlags& f, const TrainFlags& t) {
  // The document once to the block rung, to read its train section.
  int code = 0;
  auto head = CompileFile(f, pipeline::Rung::kBlock, {}, code);
  if (!head) return code;
  if (!head->program->train) {
    return Report(
        {UserError("no-train-section", "", "the document has no \"train\" section",
                   "add \"train\": {\"loss\": ..., \"optimizer\": {...}, \"data\": {...}}")},
        f.file, f.json);
  }
  const block::Program& prog = *head->program;
  const block::TrainSpec spec = *prog.train;
  if (spec.dataset < 0) {
    return Report(
        {UserError("missing-field", "/train",
                   "the train section needs \"data\": {\"dataset\", \"images\", \"labels\"}")},
        f.file, f.json);
  }
  const int epochs = t.epochs > 0 ? t.epochs : spec.epochs;
  if (t.steps_per_run < 1 || t.steps_per_run > 64) {
    return Report({UserError("bad-flag", "", "--steps-per-run takes 1 to 64")}, "", f.json);
  }

  auto train_data =
      data::LoadDataset(prog.blocks[spec.dataset].params["source"].get<std::string>(), "train");
  if (!train_data.ok()) return Report(train_data.errors(), f.file, f.json);
  auto test_data =
      data::LoadDataset(prog.blocks[spec.dataset].params["source"].get<std::string>(), "test");
  if (!test_data.ok()) return Report(test_data.errors(), f.file, f.json);

  // The batch dimension is the first dimension of the images input.
  std::string batch_dim = prog.blocks[spec.images].tensor_type.dims[0].symbol;
  auto text = ReadFile(f.file, size_t{256} << 20);
  if (!text.ok()) return Report(text.errors(), f.file, f.json);

  pipeline::CompileOptions step_options;
  if (!f.tier.empty()) step_options.lower.tier = policy::ParseTier(f.tier);
  step_options.lower.tier_override = f.tier_override;
  if (!batch_dim.empty()) step_options.lower.bind[batch_dim] = spec.batch;
  pipeline::CompileOptions eval_options = step_options;
  eval_options.lower.mode = block::LowerMode::kForward;
  if (!batch_dim.empty()) eval_options.lower.bind[batch_dim] = spec.eval_batch;

  runtime::SelectOptions select{
      .requested = t.backend, .allow_software_adapter = t.allow_software, .cpu_threads = t.threads};
  auto step_backend = runtime::SelectBackend(select);
  if (!step_backend.ok()) return Report(step_backend.errors(), "", f.json);
  auto eval_backend = runtime::SelectBackend(select);
  if (!eval_backend.ok()) return Report(eval_backend.errors(), "", f.json);
  std::string backend_name = step_backend->backend;
  std::optional<std::string> fallback = step_backend->fallback_reason;
  if (backend_name == "cpu") {
    std::cerr << runtime::CpuBanner(fallback ? *fallback : "requested with --backend=cpu");
  }
  auto trainer =
      api::Session::Prepare(text.value(), step_options, std::move(step_backend.value()));
  if (!trainer.ok()) return Report(trainer.errors(), f.file, f.json);
  auto evaluator =
      api::Session::Prepare(text.value(), eval_options, std::move(eval_backend.value()));
  if (!evaluator.ok()) return Report(evaluator.errors(), f.file, f.json);
  api::Session& s = *trainer.value();
  api::Session& ev = *evaluator.value();
  std::vector<std::string> state = StateNames(s);

  // Feed names of the images and labels inputs, as the plans know them.
  auto feed_name = [&](int block) {
    const block::Block& b = prog.blocks[block];
    return b.label.empty() ? b.id : b.label;
  };
  const std::string images_feed = feed_name(spec.images), labels_feed = feed_name(spec.labels);
  std::vector<std::string> param_names;
  for (int p : spec.params) param_names.push_back(feed_name(p));

  int start_epoch = 0;
  int64_t global_step = 0;
  if (!t.resume.empty()) {
    std::map<std::string, std::string> meta;
    auto tensors = store::LoadSafetensors(t.resume, &meta);
    if (!tensors.ok()) return Report(tensors.errors(), t.resume, f.json);
    // A checkpoint continues only the document that wrote it, and holds its whole state.
    auto number = [](const std::string& text, int64_t& out) {
      char* end = nullptr;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end || v < 0) return false;
      out = v;
      return true;
    };
    int64_t epoch = 0;
    std::vector<std::string> held;
    for (const store::NamedTensor& nt : tensors.value()) held.push_back(nt.name);
    std::vector<std::string> wanted = state;
    std::sort(held.begin(), held.end());
    std::sort(wanted.begin(), wanted.end());
    if (meta["content_id"] != head->doc.content_id) {
      return Report({UserError("checkpoint-mismatch", "",
                               "the checkpoint was written by document " + meta["content_id"] +
                                   ", not by this one (" + head->doc.content_id + ")",
                               "resume with the document that wrote it")},
                    t.resume, f.json);
    }
    if (!number(meta["epoch"], epoch) || !number(meta["step"], global_step) || epoch > epochs ||
        held != wanted) {
      return Report({UserError("bad-checkpoint", "",
                               "the checkpoint's epoch, step or tensors do not describe this "
                               "training run's state")},
                    t.resume, f.json);
    }
    for (const store::NamedTensor& nt : tensors.value()) {
      if (nt.dtype != "F32") {
        return Report(
            {UserError("bad-checkpoint", "",
                       "the tensor \"" + nt.name + "\" is " + nt.dtype + ", expected F32")},
            t.resume, f.json);
      }
      HostTensor value{MakeType(nt.shape), std::vector<std::byte>(nt.bytes.size())};
      std::memcpy(value.bytes.data(), nt.bytes.data(), nt.bytes.size());
      Status st = s.Upload(nt.name, value);
      if (!st.ok()) return Report(st.errors(), t.resume, f.json);
    }
    start_epoch = static_cast<int>(epoch);
    std::cerr << "resumed from " << t.resume << " after epoch " << start_epoch << " (step "
              << global_step << ")\n";
  }

  if (!t.init_out.empty()) {
    Status st = SaveState(s, state, t.init_out,
                          {{"epoch", std::to_string(start_epoch)},
                           {"step", std::to_string(global_step)},
                           {"content_id", head->doc.content_id}});
    if (!st.ok()) return Report(st.errors(), t.init_out, f.json);
  }
  Json all_losses = Json::array();

  const data::Dataset& train = train_data.value();
  const data::Dataset& test = test_data.value();
  int64_t steps_per_epoch = train.count / spec.batch;
  if (t.max_steps > 0) steps_per_epoch = std::min(steps_per_epoch, t.max_steps);
  Json summary;
  summary["backend"] = backend_name;
  summary["executor"] = backend_name == "webgpu" ? "fused-encoder" : "reference";
  summary["fallback_reason"] = fallback ? Json(*fallback) : Json();
  summary["steps_per_run"] = t.steps_per_run;
  summary["determinism_tier"] = policy::TierName(s.plan().graph().tier);
  summary["epochs"] = Json::array();
  std::vector<float> img, lab;

  for (int epoch = start_epoch; epoch < epochs; ++epoch) {
    auto epoch_start = Clock::now();
    std::vector<int64_t> order = data::EpochOrder(train.count, spec.shuffle_seed, epoch);
    Progress bar(epoch + 1, epochs, steps_per_epoch);
    double loss_sum = 0;
    float last_loss = 0;
    for (int64_t step = 0; step < steps_per_epoch;) {
      int64_t k = std::min<int64_t>(t.steps_per_run, steps_per_epoch - step);
      std::vector<runtime::Feeds> feeds(static_cast<size_t>(k));
      for (int64_t i = 0; i < k; ++i) {
        data::GatherBatch(train, order, (step + i) * spec.batch, spec.batch, img, lab);
        feeds[i][images_feed] = HostTensor::FromFloats(MakeType({spec.batch, train.features}), img);
        feeds[i][labels_feed] = HostTensor::FromFloats(MakeType({spec.batch}), lab);
        const float step_number = static_cast<float>(global_step + i + 1);
        feeds[i][webir::kStepInput] = HostTensor::FromFloats(MakeType({}), {&step_number, 1});
      }
      auto r = s.Run(feeds, {webir::kLossOutput});
      if (!r.ok()) {
        bar.Finish();
        return Report(r.errors(), f.file, f.json);
      }
      for (const runtime::HostTensor& l : r->watched[0].second) {
        loss_sum += l.view<float>()[0];
        all_losses.push_back(l.view<float>()[0]);
      }
      last_loss = r->watched[0].second.back().view<float>()[0];
      step += k;
      global_step += k;
      bar.Update(step, last_loss);
    }
    bar.Finish();
    double train_seconds = Seconds(epoch_start, Clock::now());

    // Evaluation: the trained weights fed into the forward plan, all test batches.
    std::vector<runtime::Feeds> eval_feeds;
    std::map<std::string, runtime::HostTensor> weights;
    for (const std::string& p : param_names) {
      auto w = s.Download(p);
      if (!w.ok()) return Report(w.errors(), f.file, f.json);
      weights[p] = w.value();
    }
    std::vector<int64_t> identity(static_cast<size_t>(test.count));
    for (int64_t i = 0; i < test.count; ++i) identity[i] = i;
    int64_t correct = 0, seen = 0;
    for (int64_t first = 0; first + spec.eval_batch <= test.count; first += spec.eval_batch) {
      data::GatherBatch(test, identity, first, spec.eval_batch, img, lab);
      runtime::Feeds feed(weights.begin(), weights.end());
      feed[images_feed] = HostTensor::FromFloats(MakeType({spec.eval_batch, test.features}), img);
      feed[labels_feed] = HostTensor::FromFloats(MakeType({spec.eval_batch}), lab);
      auto r = ev.Run({feed}, {prog.blocks[spec.eval_output].id});
      if (!r.ok()) return Report(r.errors(), f.file, f.json);
      const std::vector<float> logits = r->watched[0].second[0].ToFloats();
      int64_t classes = static_cast<int64_t>(logits.size()) / spec.eval_batch;
      for (int64_t b = 0; b < spec.eval_batch; ++b) {
        int64_t best = 0;
        for (int64_t c = 1; c < classes; ++c)
          if (logits[b * classes + c] > logits[b * classes + best]) best = c;
        correct += best == static_cast<int64_t>(lab[b]);
        ++seen;
      }
    }
    double accuracy = seen ? static_cast<double>(correct) / seen : 0;
    double epoch_seconds = Seconds(epoch_start, Clock::now());
    std::fprintf(stderr,
                 "epoch %d/%d: mean loss %.4f, test accuracy %.4f (%lld examples), %s (train %s, "
                 "%.0f steps/s)\n",
                 epoch + 1, epochs, loss_sum / std::max<int64_t>(steps_per_epoch, 1), accuracy,
                 static_cast<long long>(seen), Duration(epoch_seconds).c_str(),
                 Duration(train_seconds).c_str(), steps_per_epoch / std::max(train_seconds, 1e-9));
    summary["epochs"].push_back({{"epoch", epoch + 1},
                                 {"mean_loss", loss_sum / std::max<int64_t>(steps_per_epoch, 1)},
                                 {"test_accuracy", accuracy},
                                 {"seconds", epoch_seconds},
                                 {"train_seconds", train_seconds},
                                 {"steps", steps_per_epoch}});

    if (!t.checkpoint.empty()) {
      Status st = SaveState(s, state, t.checkpoint,
                            {{"epoch", std::to_string(epoch + 1)},
                             {"step", std::to_string(global_step)},
                             {"content_id", head->doc.content_id}});
      if (!st.ok()) return Report(st.errors(), t.checkpoint, f.json);
    }
  }
  if (!t.losses_out.empty()) {
    Status st = WriteFileAtomic(t.losses_out, all_losses.dump() + "\n");
    if (!st.ok()) return Report(st.errors(), t.losses_out, f.json);
  }
  double total = 0;
  for (const Json& e : summary["epochs"]) total += e["seconds"].get<double>();
  summary["seconds_per_epoch"] = summary["epochs"].empty() ? 0.0 : total / summary["epochs"].size();
  summary["test_accuracy"] = Json::array();
  for (const Json& e : summary["epochs"]) summary["test_accuracy"].push_back(e["test_accuracy"]);
  if (f.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    std::cout << "trained " << f.file << " on " << backend_name << " ("
              << summary["executor"].get<std::string>() << ", " << t.steps_per_run
              << " steps per submission)" << (fallback ? "; fallback: " + *fallback : "") << "\n";
    for (const Json& e : summary["epochs"]) {
      std::printf("  epoch %d  loss %.4f  test accuracy %.4f  %s\n", e["epoch"].get<int>(),
                  e["mean_loss"].get<double>(), e["test_accuracy"].get<double>(),
                  Duration(e["seconds"].get<double>()).c_str());
    }
    std::printf("  time per epoch %s\n",
                Duration(summary["seconds_per_epoch"].get<double>()).c_str());
  }
  return 0;
}

void AddTrainCommand(CLI::App& app, CompileFlags& f, TrainFlags& t, CLI::App*& cmd) {
  cmd = app.add_subcommand("train", "train a workflow's \"train\" section on its dataset");
  AddCompileFlags(cmd, f);
  cmd->add_option("--epochs", t.epochs, "epochs (default: the document's)");
  cmd->add_option("--steps-per-run", t.steps_per_run, "training steps per submission, 1 to 64");
  cmd->add_option("--backend", t.backend, "auto | webgpu | cpu")
      ->check(CLI::IsMember({"auto", "webgpu", "cpu"}));
  cmd->add_flag("--allow-software-adapter", t.allow_software, "accept a software WebGPU adapter");
  cmd->add_option("--threads", t.threads, "CPU reference threads");
  cmd->add_option("--checkpoint", t.checkpoint,
                  "write params and optimizer state here after each epoch (.safetensors, atomic)");
  cmd->add_option("--resume", t.resume, "continue from a checkpoint");
  cmd->add_option("--max-steps", t.max_steps, "cap the steps of each epoch (for quick checks)");
  cmd->add_option("--init-out", t.init_out,
                  "write the initial params and optimizer state (.safetensors)");
  cmd->add_option("--losses-out", t.losses_out, "write every step's loss as JSON");
}

}  // namespace scellis::cli
