// Inputs larger than the budget, processed in chunks of rows. An `input` declared `"stream": true`
// is a dataset of N rows (its first dimension, which the document names: "shape": ["N", 784]).
// When the plan of all N rows does not fit, the workflow is planned again at candidate row counts
// (each a real plan, as the batch search makes them) and runs chunk by chunk with the largest
// count that fits: the plan turns yellow with a `streamed-input` finding. Red only when one row
// does not fit.
//
// What streams: outputs computed row by row along the streamed dimension (elementwise ops,
// a matmul whose left operand holds the rows, softmax over the last axis, reductions over
// another axis); their chunks concatenate. A sum or mean over the rows themselves, when it is an
// output, is carried across chunks on the host in the CPU reference's order (a running f32 sum
// from row 0, then one division by N), so it matches the in-memory reference bit for bit.
// Anything that mixes rows (a matmul contracting over them, a reduction over every element, a
// reduced value used again) is refused with `stream-unsupported`, naming the node.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/run.h"

namespace scellis::api {

// How each output of a streamed document is made from the chunks.
enum class StreamedOutput {
  kRows,          // computed row by row: the chunks' values concatenate
  kSumOverRows,   // sum over the rows: a running sum across chunks
  kMeanOverRows,  // mean over the rows: the running sum, divided by N at the end
  kFixed,         // independent of the streamed input: every chunk computes the same value
};

struct StreamSpec {
  int input_node = -1;     // the streamed input in the whole document's WebIR
  std::string input_name;  // its feed name
  std::string pointer;     // its document pointer
  std::string dim;         // its first dimension's symbol
  int64_t rows = 0;        // N
  int64_t row_bytes = 0;   // bytes of one row
  TensorType input_type;   // all N rows
  struct Output {
    std::string name;
    StreamedOutput kind;
    TensorType type;  // in the document of all N rows
    // The streamed input itself, or a sum or mean of it: made from the rows fed to each chunk,
    // which the host holds already, rather than from what the chunk reads back.
    bool of_input = false;
  };
  std::vector<Output> outputs;  // in the graph's output order
  // The document a chunk is planned and run from: the streamed input's inline data removed (each
  // chunk's rows are fed) and each output over the rows reading the rows it sums instead.
  std::string chunk_text;
};

// A streamed document's plan: the spec and the chunking the search settled on.
struct Streaming {
  StreamSpec spec;
  int64_t chunk_rows = 0;
  int64_t chunks = 0;
  int64_t last_chunk_rows = 0;
};

// The streamed input of compiled document `c` and how its outputs stream; nullopt when no input
// is declared `"stream": true`. `stream-unsupported` (pointing at the node) when the document
// cannot be run in chunks with the in-memory result.
Result<std::optional<StreamSpec>> AnalyzeStream(std::string_view text, const pipeline::Compiled& c);

// Settles the chunking of a streamed document `c` (compiled from `text` with `options`, planned):
// a plan that fits, or a red plan for any other reason than memory, is left as it is (and a
// streamed run then takes all rows at once). A red memory plan is searched for the largest chunk
// that fits; when one row fits, `c`'s plan becomes the plan of one chunk, yellow, with a
// `streamed-input` finding and its StreamFit. Errors: `stream-unsupported`, or a chunk that
// fails to compile.
Result<std::optional<Streaming>> PlanStreaming(std::string_view text,
                                               const pipeline::CompileOptions& options,
                                               pipeline::Compiled& c);

// Runs a streamed document chunk by chunk on `exec`: the chunk plan (`c`'s, after PlanStreaming)
// for every full chunk, a second plan for a shorter last one, the outputs assembled into `report`
// (outputs, stats["streaming"]). `feeds` may hold the whole streamed input in place of its inline
// data. `events.stream_progress` hears of every chunk.
Status RunStreamed(runtime::Executor& exec, const Streaming& s, const pipeline::Compiled& c,
                   const pipeline::CompileOptions& options, const runtime::Feeds& feeds,
                   const runtime::RunOptions& run_options, const RunEvents& events,
                   RunReport& report);

}  // namespace scellis::api
