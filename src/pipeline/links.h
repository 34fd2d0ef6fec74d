// Provenance across the ladder, for readers that show one rung beside another (the Studio's rung
// tabs highlight the document nodes a kernel or plan step came from, and the reverse). Read from
// the rungs themselves: each kernel lists the WebIR nodes it computes, each WebIR node keeps the
// JSON pointer of the document node it came from, each plan step names its kernel.
#pragma once

#include "base/json_util.h"
#include "pipeline/compile.h"

namespace scellis::pipeline {

// `c` must have reached the execplan rung (or the kernel rung: then "steps" is empty).
//   {"webir":   [{"node": 3, "name": "xc", "origin": "/nodes/3", "doc": "xc" | null}],
//    "kernels": [{"kernel": 0, "name": "k0_mean", "webir": [2], "doc": ["mean"]}],
//    "steps":   [{"step": 0, "kernel": 0, "name": "k0_mean"}],
//    "doc":     {"mean": {"webir": [2], "kernels": [0], "steps": [0]}}}
// A WebIR node the descent made itself (a gradient, an optimizer update) has the origin of the
// document node it serves; one made from nothing has no document node ("doc": null).
Json ProvenanceLinks(const Compiled& c);

}  // namespace scellis::pipeline
