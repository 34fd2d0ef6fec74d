#include "api/run.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>

#include "api/fit_batch.h"
#include "api/stream.h"
#include "store/store.h"
#include "webir/passes/append_train_step.h"
#include "workplan/workplan.h"

namespace scellis::api {
namespace {

// The one place this layer reads a host tensor's storage. Integral values print as integers
// ([0, 60, 120], like the protocol's own examples) while the dtype holds them exactly; -0 is not
// one of them (an integer has no sign of zero), so it prints as -0.0. Other finite values print as
// the shortest decimal that reads back as the same double, which for an f32 value is that f32:
// every finite value comes back bit for bit.
Json ValuesJson(const runtime::HostTensor& t) {
  Json data = Json::array();
  const bool f32 = t.type.dtype == DType::kF32;
  const double exact_below = f32 ? 16777216.0 : 4294967296.0;
  for (int64_t i = 0; i < t.elements(); ++i) {
    const double v = t.ValueAt(i);
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < exact_below &&
        !(v == 0 && std::signbit(v)))
      data.push_back(static_cast<int64_t>(v));
    else if (std::isfinite(v))
      data.push_back(f32 ? Json(static_cast<float>(v)) : Json(v));
    else
      data.push_back(std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity"));
  }
  return data;
}

int64_t ReadbackBytes(const runtime::HostTensor& t) {
  return t.type.bytes();
}

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

bool Requested(const std::vector<std::string>& history, const std::string& name) {
  return std::find(history.begin(), history.end(), name) != history.end();
}

// A training step's program takes its 1-based step number as the scalar input "step" (Adam's bias
// correction needs it), and so may a document (a scalar input named "step", the step port of
// uniform and dropout); a run of such a program feeds it step by step, as training does, unless
// the caller feeds it. -1: the plan has no such input.
int StepNode(const execplan::Plan& plan) {
  for (const webir::Node& n : plan.graph().nodes)
    if (n.role == webir::Role::kInput && runtime::FeedName(n) == webir::kStepInput &&
        n.type.rank() == 0 && !n.data)
      return n.id;
  return -1;
}

// The feed of step number `step` for the plan's step input `node` (StepNode); none when -1.
runtime::Feeds StepFeeds(const execplan::Plan& plan, int node, int64_t step) {
  runtime::Feeds feeds;
  if (node >= 0) {
    const float value = static_cast<float>(step);
    feeds[webir::kStepInput] =
        runtime::HostTensor::FromFloats(plan.graph().at(node).type, {&value, 1});
  }
  return feeds;
}

// One step, as the executor's one-shot run: every output comes back once.
Status RunOnce(runtime::Executor& exec, const execplan::Plan& plan, const runtime::Feeds& feeds,
               const runtime::RunOptions& run_options, const std::vector<std::string>& history,
               RunReport& report) {
  runtime::Feeds all = feeds;
  for (auto& [name, t] : StepFeeds(plan, StepNode(plan), 1)) all.try_emplace(name, std::move(t));
  SCELLIS_ASSIGN_OR_RETURN(runtime::RunResult r, exec.Run(plan, all, run_options));
  int64_t readback = 0;
  for (auto& [name, t] : r.outputs) {
    readback += ReadbackBytes(t);
    if (Requested(history, name)) report.history.push_back({name, {t}});
  }
  report.executor = r.executor;
  report.outputs = std::move(r.outputs);
  report.stats = std::move(r.stats);
  report.stats["steps"] = 1;
  report.stats["iterations"] = plan.graph().repeat;
  // A backend that counts its submissions says how many (the generic executor makes one per
  // iteration); one otherwise.
  if (!report.stats.contains("submissions")) report.stats["submissions"] = 1;
  report.stats["readback_bytes"] = readback;
  return Status::Ok();
}

// A long run's GPU timestamps list the first this many dispatches' times; the totals and the
// by-kernel sums count every timed dispatch.
constexpr size_t kListedDispatchTimes = 4096;

// One run's GPU timestamps (webgpu's `gpu_timestamps`: the timed dispatches, their busy time, the
// idle gaps between them, the span, each one's time and the sums by kernel) added into the totals
// of the runs before: `span_us` becomes the sum of the runs' spans, the time between runs left
// out; `dispatch_us` keeps the first kListedDispatchTimes times.
void AddGpuTimes(Json& total, const Json& run) {
  if (total.is_null()) {
    total = run;
    return;
  }
  total["dispatches"] = total["dispatches"].get<int64_t>() + run["dispatches"].get<int64_t>();
  for (const char* key : {"busy_us", "gaps_us", "span_us"})
    total[key] = total[key].get<double>() + run[key].get<double>();
  for (const Json& us : run["dispatch_us"]) {
    if (total["dispatch_us"].size() >= kListedDispatchTimes) break;
    total["dispatch_us"].push_back(us);
  }
  for (const auto& [kernel, sums] : run["by_kernel"].items()) {
    Json& into = total["by_kernel"][kernel];
    if (into.is_null()) into = {{"dispatches", 0}, {"busy_us", 0.0}};
    into["dispatches"] = into["dispatches"].get<int64_t>() + sums["dispatches"].get<int64_t>();
    into["busy_us"] = into["busy_us"].get<double>() + sums["busy_us"].get<double>();
  }
}

// Many steps in a prepared session: up to 64 per run, two runs in flight, the history outputs
// watched, and the last value of every output downloaded once at the end.
// The feeds are the starting values of params and carried inputs, and the value of every step of
// an input that is fed, not carried.
Status RunMany(runtime::Executor& exec, const execplan::Plan& plan, int steps,
               const runtime::Feeds& feeds, const runtime::RunOptions& run_options,
               const std::vector<std::string>& history, const RunEvents& events,
               RunReport& report) {
  auto start = std::chrono::steady_clock::now();
  SCELLIS_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Prepared> prepared,
                           exec.Prepare(plan, feeds, run_options));
  runtime::Feeds every_step;
  for (int node : runtime::FedInputs(plan.graph())) {
    auto it = feeds.find(runtime::FeedName(plan.graph().at(node)));
    if (it != feeds.end()) every_step.insert(*it);
  }
  for (const std::string& name : history) report.history.push_back({name, {}});
  const int step_node = StepNode(plan);
  int64_t readback = 0;
  int submissions = 0;
  Json backend_counters = Json::object();
  // Two runs in flight: the next run is recorded while the backend runs the one before.
  int started = 0;
  std::deque<int> run_steps;
  for (int done = 0; done < steps;) {
    while (started < steps && prepared->runs_in_flight() < runtime::kMaxRunsInFlight) {
      const int k = std::min(steps - started, kMaxStepsPerSubmission);
      std::vector<runtime::Feeds> step_feeds(k, every_step);
      for (int i = 0; i < k; ++i)
        for (auto& [name, t] : StepFeeds(plan, step_node, started + i + 1))
          step_feeds[i].try_emplace(name, std::move(t));
      SCELLIS_TRY(prepared->StartSteps(step_feeds, history));
      run_steps.push_back(k);
      started += k;
    }
    SCELLIS_ASSIGN_OR_RETURN(runtime::StepsResult chunk, prepared->FinishSteps());
    // The backend's own counters (dispatches, maps, uploads, ...) add up over the submissions.
    for (const auto& [key, value] : chunk.stats.items()) {
      if (key == "iterations_per_dispatch")
        backend_counters[key] = value;  // the plan's, not a count
      else if (value.is_number_integer() && key != "steps" && key != "readback_bytes")
        backend_counters[key] = backend_counters.value(key, int64_t{0}) + value.get<int64_t>();
      else if (value.is_number_float() && key.rfind("host_", 0) == 0)  // the host's times
        backend_counters[key] = backend_counters.value(key, 0.0) + value.get<double>();
      else if (key == "gpu_timestamps")
        AddGpuTimes(backend_counters[key], value);
    }
    for (size_t i = 0; i < chunk.watched.size(); ++i) {
      for (runtime::HostTensor& t : chunk.watched[i].second) {
        readback += ReadbackBytes(t);
        report.history[i].second.push_back(std::move(t));
      }
    }
    done += run_steps.front();
    run_steps.pop_front();
    ++submissions;
    if (events.progress) events.progress(done, steps);
    if (done < steps && events.cancelled && events.cancelled()) {
      // A run started behind this one is waited for and dropped.
      while (prepared->runs_in_flight() > 0) (void)prepared->FinishSteps();
      return UserError("cancelled", "",
                       "the run was cancelled after " + std::to_string(done) + " of " +
                           std::to_string(steps) + " steps");
    }
  }
  int64_t downloads = 0;
  for (const webir::Output& o : plan.graph().outputs) {
    // An output with a history already came back: its last value is the history's last step.
    auto kept = std::find_if(report.history.begin(), report.history.end(),
                             [&](const auto& h) { return h.first == o.name; });
    if (kept != report.history.end()) {
      report.outputs.emplace_back(o.name, kept->second.back());
      continue;
    }
    SCELLIS_ASSIGN_OR_RETURN(runtime::HostTensor t, prepared->Download(o.name));
    ++downloads;
    readback += ReadbackBytes(t);
    report.outputs.emplace_back(o.name, std::move(t));
  }
  report.executor = prepared->executor();
  // Each download at the end is a map of its own on a backend that maps.
  if (backend_counters.contains("maps"))
    backend_counters["maps"] = backend_counters["maps"].get<int64_t>() + downloads;
  report.stats = backend_counters;
  // The generic executor submits every iteration: the backend's count is then the true one.
  if (!report.stats.contains("submissions")) report.stats["submissions"] = submissions;
  report.stats.update(Json{{"steps", steps},
                           {"iterations", steps * plan.graph().repeat},
                           {"kernels", plan.steps.size()},
                           {"wall_ms", MillisecondsSince(start)},
                           {"memory_allocated_bytes", plan.memory.allocated},
                           {"readback_bytes", readback}});
  return Status::Ok();
}

}  // namespace

Json TensorToJson(const runtime::HostTensor& t) {
  return {{"shape", t.type.sizes()}, {"dtype", DTypeName(t.type.dtype)}, {"data", ValuesJson(t)}};
}

std::vector<float> ValuesOf(const runtime::HostTensor& t) {
  return t.ToFloats();
}

std::vector<std::string> ValueTexts(const runtime::HostTensor& t) {
  const bool integral =
      t.type.dtype == DType::kI32 || t.type.dtype == DType::kU32 || t.type.dtype == DType::kBool;
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(t.elements()));
  char buf[32];
  for (int64_t i = 0; i < t.elements(); ++i) {
    const double v = t.ValueAt(i);
    if (integral) {
      out.push_back(std::to_string(static_cast<int64_t>(v)));
    } else {
#if defined(__cpp_lib_to_chars)
      auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
      out.emplace_back(buf, r.ptr);
#else
      // A library without floating-point to_chars (the WebAssembly build's): nine significant
      // digits, which read back as the same float, if not always in the fewest digits.
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v)));
      out.emplace_back(buf);
#endif
    }
  }
  return out;
}

Json RunReport::ToJson() const {
  Json j;
  j["backend"] = backend;
  j["executor"] = executor;
  j["fallback_reason"] = fallback_reason ? Json(*fallback_reason) : Json();
  j["attempts"] = attempts;
  j["adapter"] = adapter.empty() ? Json() : Json(adapter);
  j["determinism_tier"] = determinism_tier;
  j["content_id"] = content_id;
  j["outputs"] = Json::object();
  for (const auto& [name, t] : outputs) j["outputs"][name] = TensorToJson(t);
  if (!history.empty()) {
    j["history"] = Json::object();
    for (const auto& [name, per_step] : history) {
      Json h = {{"steps", Json::array()}};
      for (const runtime::HostTensor& t : per_step) {
        h["shape"] = t.type.sizes();
        h["dtype"] = DTypeName(t.type.dtype);
        h["steps"].push_back(ValuesJson(t));
      }
      j["history"][name] = h;
    }
  }
  j["stats"] = stats;
  j["streaming"] = streaming;
  if (receipts) j["receipts"] = receipts->ToJson();
  return j;
}

std::optional<std::string> PinnedExecutorFallback(const std::string& executor) {
  if (executor != runtime::kGenericExecutor) return std::nullopt;
  return "the generic executor was pinned: one submission per iteration (per temporally blocked "
         "group of iterations)";
}

std::optional<Diagnostic> DatasetNotRead(const block::Program& p) {
  if (!p.train || p.train->dataset < 0 || p.train->images < 0) return std::nullopt;
  const block::Block& images = p.blocks[p.train->images];
  const block::Block& dataset = p.blocks[p.train->dataset];
  const Json& source = dataset.params["source"];
  return UserError("dataset-not-read", images.pointer,
                   "the input \"" + (images.label.empty() ? images.id : images.label) +
                       "\" is fed by the dataset " +
                       (source.is_string() ? "\"" + source.get<std::string>() + "\"" : dataset.id) +
                       " when the workflow trains; a run reads no dataset",
                   "train it with `scellis train`, which reads the dataset batch by batch under "
                   "the plan judged here");
}

Result<RunReport> Run(std::string_view text, const RunOptions& options, const RunEvents& events) {
  if (options.steps < 1) {
    return UserError("bad-step-count", "",
                     "a run takes at least one step, got " + std::to_string(options.steps));
  }
  SCELLIS_ASSIGN_OR_RETURN(runtime::Selection sel, runtime::SelectBackend(options.select));
  if (options.require_profile && sel.profile.key != *options.require_profile) {
    return UserError("replay-profile-mismatch", "",
                     "the run must happen on device profile \"" + *options.require_profile +
                         "\" but the " + sel.backend + " backend here is \"" + sel.profile.key +
                         "\"",
                     "replay it on the device it was recorded on");
  }
  pipeline::CompileOptions compile = options.compile;
  compile.up_to = pipeline::Rung::kExecplan;
  compile.plan.limits = sel.limits;
  // The fed inputs of the steps in flight at once (RunMany: two runs of up to 64), staged on the
  // device.
  compile.plan.staged_steps = std::min<int64_t>(
      options.steps, int64_t{kMaxStepsPerSubmission} * int64_t{runtime::kMaxRunsInFlight});
  // The history's values of every step, kept until the run returns.
  compile.plan.watched = options.history;
  compile.plan.watched_steps_kept = options.steps;
  SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled c, pipeline::Compile(text, compile));
  if (events.note)
    for (const Diagnostic& d : c.notes) events.note(d);
  // A red plan is refused with its fix, where a smaller batch is one (a failed search leaves the
  // plan's own findings).
  (void)ExplainRedPlan(text, compile, c);
  // A streamed input whose whole plan does not fit runs in chunks: `c` then holds a chunk's plan.
  SCELLIS_ASSIGN_OR_RETURN(std::optional<Streaming> streaming, PlanStreaming(text, compile, c));
  const execplan::Plan& plan = *c.plan;
  if (plan.verdict == execplan::Verdict::kRed) return Status(plan.findings);
  if (events.note)
    for (const Diagnostic& d : plan.findings) events.note(d);
  // A training workflow's images come from its dataset, which a run does not read: refused unless
  // the caller feeds them.
  if (std::optional<Diagnostic> d = c.program ? DatasetNotRead(*c.program) : std::nullopt) {
    const block::Block& images = c.program->blocks[c.program->train->images];
    if (!options.feeds.count(images.label.empty() ? images.id : images.label)) return Status({*d});
  }
  for (const std::string& name : options.history) {
    const auto& outs = plan.graph().outputs;
    if (std::none_of(outs.begin(), outs.end(),
                     [&](const webir::Output& o) { return o.name == name; })) {
      return UserError("unknown-output", "",
                       "the document has no output named \"" + name + "\" to keep a history of",
                       "name one of the document's \"outputs\"");
    }
  }
  if (streaming && options.steps != 1) {
    return UserError(
        "stream-unsupported", streaming->spec.pointer,
        "a streamed input runs in chunks for one step, not " + std::to_string(options.steps),
        "run one step, or raise the budget so that all rows fit at once");
  }
  if (events.backend) events.backend(sel.backend, sel.fallback_reason);
  if (events.selected) events.selected(sel);

  RunReport report;
  report.backend = sel.backend;
  report.fallback_reason = sel.fallback_reason;
  report.attempts = sel.attempts;
  report.determinism_tier = policy::TierName(plan.graph().tier);
  report.content_id = c.doc.content_id;
  report.profile = sel.profile.key;
  report.adapter = sel.profile.adapter;
  report.plan_hash = workplan::PlanHash(plan);
  report.tolerance = policy::ToleranceName(plan.graph().tolerance);
  report.thresholds = plan.thresholds;
  report.steps = options.steps;
  runtime::RunOptions run_options;
  run_options.executor = options.executor;
  if (auto pinned = PinnedExecutorFallback(options.executor)) report.fallback_reason = pinned;
  if (streaming) {
    SCELLIS_TRY(RunStreamed(*sel.executor, *streaming, c, compile, options.feeds, run_options,
                            events, report));
  } else {
    SCELLIS_TRY(options.steps == 1 ? RunOnce(*sel.executor, plan, options.feeds, run_options,
                                             options.history, report)
                                   : RunMany(*sel.executor, plan, options.steps, options.feeds,
                                             run_options, options.history, events, report));
  }

  // Which kernels have earned trust on this device: receipts gate trust, not execution.
  // The CPU reference is the oracle itself, and the null backend computes nothing: only GPU
  // kernels earn receipts.
  if (sel.backend == "webgpu") {
    if (auto store = store::Store::Open(options.store_root); store.ok()) {
      report.receipts =
          conform::CheckReceipts(*store, sel.profile.key, plan.module(), plan.graph().tier);
    }
  }
  return report;
}

}  // namespace scellis::api
