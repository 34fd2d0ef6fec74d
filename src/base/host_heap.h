// How a process that runs training steps keeps its host heap: called once at start-up by every
// front end that owns its process (the `scellis` command, the Python module on import).
#pragma once

namespace scellis {

// A training step allocates and frees host vectors of about 1 MiB (gradient sets, partials, feeds,
// a streamed batch). Over glibc's starting mmap threshold (128 KiB) each is mapped and unmapped
// afresh unless some earlier large free happened to raise it: a streamed data-parallel epoch ran
// 2.5x slower than a held one for that alone (bench/RESULTS.md, 2026-12-03). This fixes the
// thresholds so such blocks stay on the heap: blocks past 32 MiB are still mapped, and a heap with
// over 64 MiB free at its top is still trimmed. Does nothing where the C library is not glibc.
void KeepStepSizedBlocksOnHeap();

}  // namespace scellis
