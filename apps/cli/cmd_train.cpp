// `scellis train`: parses the flags, hands the document to the engine's Trainer and draws what it
// reports — a progress bar, a line per epoch, and the summary.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "base/atomic_file.h"
#include "common.h"
#include "record/run_record.h"
#include "train/shards.h"
#include "train/trainer.h"

namespace scellis::cli {
namespace {

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
class ProgressBar {
 public:
  ProgressBar() : tty_(isatty(STDERR_FILENO)) {}

  void Update(const train::Progress& p) {
    if (p.epoch != epoch_) {
      epoch_ = p.epoch;
      last_decile_ = -1;
    }
    active_ = true;
    const int64_t total = std::max<int64_t>(p.total, 1);
    double eta = p.steps_per_second > 0 ? (p.total - p.step) / p.steps_per_second : 0;
    int width = 30;
    int filled = static_cast<int>(width * p.step / total);
    char line[256];
    std::snprintf(
        line, sizeof line, "epoch %d/%d [%s%s] step %lld/%lld  loss %.4f  %.0f steps/s  ETA %s",
        p.epoch, p.epochs, std::string(filled, '#').c_str(),
        std::string(width - filled, '.').c_str(), static_cast<long long>(p.step),
        static_cast<long long>(p.total), p.loss, p.steps_per_second, Duration(eta).c_str());
    if (tty_) {
      std::fprintf(stderr, "\r%s", line);
    } else if (p.step * 10 / total != last_decile_ || p.step == p.total) {
      last_decile_ = p.step * 10 / total;
      std::fprintf(stderr, "%s\n", line);
    }
  }
  // Ends the bar's line (on a terminal) before anything else is printed.
  void Finish() {
    if (active_ && tty_) std::fprintf(stderr, "\n");
    active_ = false;
  }

 private:
  bool tty_;
  bool active_ = false;
  int epoch_ = 0;
  int64_t last_decile_ = -1;
};

}  // namespace

int TrainCommand(const CompileFlags& f, const TrainFlags& t) {
  auto compile = CompileOptionsFrom(f);
  if (!compile.ok()) return Report(compile.errors(), "", f.json);
  auto text = ReadFile(f.file, size_t{256} << 20);
  if (!text.ok()) return Report(text.errors(), f.file, f.json);

  train::TrainOptions options;
  options.compile = compile.value();
  options.select = {.requested = t.backend,
                    .allow_software_adapter = t.allow_software,
                    .cpu_threads = t.threads,
                    .adapter = t.adapter};
  options.epochs = t.epochs;
  options.steps_per_run = t.steps_per_run;
  options.max_steps = t.max_steps;
  options.resume = t.resume;
  options.init_out = t.init_out;
  options.checkpoint = t.checkpoint;
  options.losses_out = t.losses_out;
  options.ranks = t.ranks;
  options.chunks = t.chunks;
  options.collective_timeout_seconds = t.collective_timeout_seconds;
  options.record_shards = t.record_shards;
  options.stream_dataset = f.stream_dataset;
  options.host_batches = t.host_batches;

  ProgressBar bar;
  train::TrainEvents events;
  events.note = [&](const Diagnostic& d) { PrintNotes({d}, f.file); };
  events.backend = [](const std::string& backend, const std::optional<std::string>& fallback) {
    if (backend == "cpu")
      std::cerr << runtime::CpuBanner(fallback ? *fallback : "requested with --backend=cpu");
  };
  events.device = [&](int rank, const std::string& adapter) {
    // One write per line: the ranks of a job share the terminal.
    const std::string line =
        (t.ranks > 1 ? "rank " + std::to_string(rank) + ": " : std::string()) + adapter + "\n";
    std::fputs(line.c_str(), stderr);
  };
  events.resumed = [&](int epoch, int64_t step) {
    std::cerr << "resumed from " << t.resume << " after epoch " << epoch << " (step " << step
              << ")\n";
  };
  events.progress = [&](const train::Progress& p) { bar.Update(p); };
  events.epoch = [&](const train::EpochResult& e) {
    bar.Finish();
    std::fprintf(stderr,
                 "epoch %d/%d: mean loss %.4f, test accuracy %.4f (%lld examples), %s (train %s, "
                 "%.0f steps/s)\n",
                 e.epoch, e.epochs, e.mean_loss, e.test_accuracy,
                 static_cast<long long>(e.examples), Duration(e.seconds).c_str(),
                 Duration(e.train_seconds).c_str(), e.steps_per_second());
  };

  train::Trainer trainer(options, events);
  auto result = trainer.Train(text.value());
  if (!result.ok()) {
    bar.Finish();
    std::string file;
    switch (trainer.failure_concern()) {
      case train::Trainer::Concern::kDocument:
        file = f.file;
        break;
      case train::Trainer::Concern::kOptions:
        break;
      case train::Trainer::Concern::kResume:
        file = t.resume;
        break;
      case train::Trainer::Concern::kInitOut:
        file = t.init_out;
        break;
      case train::Trainer::Concern::kCheckpoint:
        file = t.checkpoint;
        break;
      case train::Trainer::Concern::kLossesOut:
        file = t.losses_out;
        break;
    }
    return Report(result.errors(), file, f.json);
  }
  const train::TrainResult& r = result.value();
  // Every rank trained the same replica; rank 0 speaks for the job (and records it).
  if (r.rank != 0) return 0;
  const std::string run_id = RecordOrWarn(t.no_record, [&](const store::Store& store) {
    return record::RecordTraining(store, text.value(), options, r);
  });
  if (f.json) {
    Json j = r.ToJson();
    j["run_id"] = run_id.empty() ? Json() : Json(run_id);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "trained " << f.file << " on " << r.backend << " (" << r.executor << ", "
            << (r.ranks > 1 || r.chunks > 1
                    ? "data parallel: " + std::to_string(r.ranks) + " rank" +
                          (r.ranks > 1 ? "s, " : ", ") + std::to_string(r.chunks) + " chunks"
                    : std::to_string(r.steps_per_run) + " steps per run")
            << ")" << (r.fallback_reason ? "; fallback: " + *r.fallback_reason : "") << "\n";
  if (r.batches == "device")
    std::printf("  batches gathered on the device from the train split held there\n");
  else if (r.host_batches_reason)
    std::printf("  batches fed from the host: %s\n", r.host_batches_reason->c_str());
  for (const train::EpochResult& e : r.epochs) {
    std::printf("  epoch %d  loss %.4f  test accuracy %.4f  %s\n", e.epoch, e.mean_loss,
                e.test_accuracy, Duration(e.seconds).c_str());
  }
  std::printf("  time per epoch %s\n", Duration(r.seconds_per_epoch()).c_str());
  if (!run_id.empty())
    std::printf("  run record %s (scellis replay %s)\n", run_id.c_str(), run_id.c_str());
  if (!r.shard_record.empty())
    std::printf("  shard record %s (scellis verify %s --shard K)\n", r.shard_record.c_str(),
                r.shard_record.c_str());
  return 0;
}

int VerifyCommand(const VerifyFlags& v) {
  auto c = train::VerifyShard(v.run_id, v.shard);
  if (!c.ok()) return Report(c.errors(), "", v.json);
  if (v.json) {
    std::cout << c->ToJson().dump(2) << "\n";
  } else {
    const std::string outcome =
        c->bit_exact ? "equal bit for bit"
        : c->ok      ? "within tolerance (max abs diff " + std::to_string(c->max_abs_diff) + ")"
                     : "DIFFER (max abs diff " + std::to_string(c->max_abs_diff) + ")";
    std::printf(
        "shard %d of %d (step %lld, chunks [%d,%d), examples [%lld,%lld) of the batch), "
        "recorded on %s, re-run on the CPU reference: %d partials %s\n",
        c->shard, c->ranks, static_cast<long long>(c->global_step), c->first_chunk,
        c->first_chunk + c->chunks, static_cast<long long>(c->first_example),
        static_cast<long long>(c->first_example + c->examples), c->recorded_backend.c_str(),
        c->partials, outcome.c_str());
  }
  if (c->ok) return 0;
  return Report(
      {RuntimeError("shard-mismatch", "shard " + std::to_string(c->shard) +
                                          " re-run does not reproduce the record (max abs diff " +
                                          std::to_string(c->max_abs_diff) + ")")},
      "", v.json);
}

}  // namespace scellis::cli
