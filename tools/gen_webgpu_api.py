#!/usr/bin/env python3
"""Generates src/runtime/backends/webgpu/webgpu_api.h from the WebGPU C API description (webgpu.yml).

Scellis loads Dawn at run time with dlopen, so it declares the part of the C API it uses itself.
Those declarations must match Dawn's ABI exactly; writing them by hand invites the mistakes that
old copies of webgpu.h carry (shifted enum values, C strings where the API now takes
WGPUStringView, missing struct members). This script derives them mechanically from the same YAML
file that webgpu.h is generated from, restricted to the compute subset listed below, and also
emits the list of entry points the loader resolves with dlsym.

Usage:  tools/gen_webgpu_api.py PATH/TO/webgpu.yml [-o OUTPUT]

The output is committed; the build never reads the YAML. Rerun the script after changing the
subset and commit the regenerated header together with the change.

Mapping rules (those of webgpu.h):
  * enum value = (enum_prefix << 16) | index of the entry in its list; `null` entries reserve an
    index. Enums are 32-bit (a Force32 = 0x7FFFFFFF entry pins the size).
  * bitflags are 64-bit (WGPUFlags): entry 0 is 0, entry i is 1 << (i - 1), or the OR of its
    `value_combination`.
  * bool is WGPUBool (uint32_t); every string kind is WGPUStringView {data, length}.
  * struct kinds: `extensible` and `extensible_callback_arg` start with `WGPUChainedStruct*
    nextInChain`, `extension` starts with an embedded `WGPUChainedStruct chain`, `standalone` has
    no chain.
  * array<T> becomes `size_t <singular>Count; T const* <name>;` (both in structs and arguments).
  * a method with `callback: callback.X` takes a trailing `WGPUXCallbackInfo callbackInfo` by
    value and returns WGPUFuture. Callback-info structs are {nextInChain, mode, callback,
    userdata1, userdata2}; callbacks of style `immediate` have no mode.
  * every object gets implicit AddRef/Release; structs with `free_members` get
    wgpu<Struct>FreeMembers(<Struct> value) taking the struct by value.
"""

import argparse
import os
import sys

try:
    import yaml
except ImportError:  # pragma: no cover
    sys.exit("gen_webgpu_api.py: needs PyYAML (apt install python3-yaml, or pip install pyyaml)")

# ---------------------------------------------------------------------------------------------
# The subset Scellis uses. Types they reference are pulled in automatically.

FUNCTIONS = ["create_instance"]

METHODS = {
    "instance": ["request_adapter", "wait_any", "process_events"],
    "adapter": ["get_info", "get_limits", "get_features", "has_feature", "request_device"],
    "device": [
        "create_buffer", "create_shader_module", "create_compute_pipeline", "create_bind_group",
        "create_command_encoder", "get_queue", "get_limits", "get_features", "destroy",
        "push_error_scope", "pop_error_scope", "get_lost_future", "create_query_set",
    ],
    "queue": ["submit", "write_buffer", "on_submitted_work_done"],
    "buffer": ["map_async", "get_const_mapped_range", "unmap", "destroy", "get_size",
               "get_map_state"],
    "shader_module": ["get_compilation_info"],
    "compute_pipeline": ["get_bind_group_layout"],
    "command_encoder": ["begin_compute_pass", "copy_buffer_to_buffer", "clear_buffer", "finish",
                        "resolve_query_set"],
    "compute_pass_encoder": ["set_pipeline", "set_bind_group", "dispatch_workgroups", "end"],
}

# Objects whose handles the project releases (AddRef/Release are implicit in the API).
RELEASED_OBJECTS = [
    "instance", "adapter", "device", "queue", "buffer", "shader_module", "compute_pipeline",
    "bind_group_layout", "bind_group", "command_encoder", "compute_pass_encoder", "command_buffer",
    "query_set",
]

FREE_MEMBERS = ["adapter_info", "supported_features"]

# Extension structs are only reachable through a chain, never by type reference: list them.
EXTRA_STRUCTS = ["shader_source_WGSL"]

# Enums for which a name lookup (`WGPUBackendType_Name(v)` -> "vulkan") is generated.
NAMED_ENUMS = [
    "backend_type", "adapter_type", "feature_name", "error_type", "device_lost_reason",
    "map_async_status", "queue_work_done_status", "request_adapter_status",
    "request_device_status", "compilation_message_type", "wait_status",
]

# ---------------------------------------------------------------------------------------------


def pascal(name):
    """`discrete_GPU` -> `DiscreteGPU`, `extent_3D` -> `Extent3D`."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def camel(name):
    """`vendor_ID` -> `vendorID`, `timeout_NS` -> `timeoutNS`."""
    parts = [p for p in name.split("_") if p]
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def singular(name):
    if name.endswith("ies"):
        return name[:-3] + "y"
    if name.endswith("s"):
        return name[:-1]
    return name


PRIMITIVES = {
    "bool": "WGPUBool",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "int32": "int32_t",
    "usize": "size_t",
    "float32": "float",
    "nullable_float32": "float",
    "float64_supertype": "double",
    "string_with_default_empty": "WGPUStringView",
    "nullable_string": "WGPUStringView",
    "out_string": "WGPUStringView",
}


class Api:
    def __init__(self, doc):
        self.doc = doc
        prefix = doc.get("enum_prefix", 0)  # YAML reads 0x0000 as an int; accept a string too
        self.enum_prefix = prefix if isinstance(prefix, int) else int(str(prefix), 0)
        self.enums = {e["name"]: e for e in doc["enums"]}
        self.bitflags = {b["name"]: b for b in doc["bitflags"]}
        self.structs = {s["name"]: s for s in doc["structs"]}
        self.callbacks = {c["name"]: c for c in doc["callbacks"]}
        self.objects = {o["name"]: o for o in doc["objects"]}
        self.functions = {f["name"]: f for f in doc["functions"]}
        self.used_enums = set()
        self.used_bitflags = set()
        self.used_structs = set()
        self.used_callbacks = set()
        self.used_objects = set()

    # -- reachability -------------------------------------------------------------------------

    def use_type(self, t):
        if t.startswith("array<"):
            self.use_type(t[len("array<"):-1])
            return
        kind, _, name = t.partition(".")
        if not name:
            return
        if kind == "enum":
            self.need(name, self.enums, "enum")
            self.used_enums.add(name)
        elif kind == "bitflag":
            self.need(name, self.bitflags, "bitflag")
            self.used_bitflags.add(name)
        elif kind == "object":
            self.need(name, self.objects, "object")
            self.used_objects.add(name)
        elif kind == "callback":
            self.need(name, self.callbacks, "callback")
            if name not in self.used_callbacks:
                self.used_callbacks.add(name)
                self.used_enums.add("callback_mode")
                for a in self.callbacks[name].get("args", []):
                    self.use_type(a["type"])
        elif kind == "struct":
            self.need(name, self.structs, "struct")
            if name not in self.used_structs:
                self.used_structs.add(name)
                for m in self.structs[name].get("members", []) or []:
                    self.use_type(m["type"])

    @staticmethod
    def need(name, table, what):
        if name not in table:
            sys.exit(f"gen_webgpu_api.py: {what} `{name}` is not in the YAML")

    def method(self, obj, name):
        for m in self.objects[obj]["methods"]:
            if m["name"] == name:
                return m
        sys.exit(f"gen_webgpu_api.py: method `{obj}.{name}` is not in the YAML")

    def collect(self):
        self.used_enums.update(["s_type"])
        for f in FUNCTIONS:
            self.need(f, self.functions, "function")
            self.use_call(self.functions[f])
        for obj, methods in METHODS.items():
            self.need(obj, self.objects, "object")
            self.used_objects.add(obj)
            for m in methods:
                self.use_call(self.method(obj, m))
        for obj in RELEASED_OBJECTS:
            self.use_type("object." + obj)
        for s in FREE_MEMBERS + EXTRA_STRUCTS:
            self.use_type("struct." + s)
        for e in NAMED_ENUMS:
            self.use_type("enum." + e)

    def use_call(self, f):
        for a in f.get("args", []) or []:
            self.use_type(a["type"])
        if f.get("returns"):
            self.use_type(f["returns"]["type"])
        if f.get("callback"):
            self.use_type(f["callback"])
            self.used_structs.add("future")

    # -- C spelling ---------------------------------------------------------------------------

    def ctype(self, t, context_name=""):
        if t in PRIMITIVES:
            return PRIMITIVES[t]
        if t.startswith("c_void"):
            return "void"
        kind, _, name = t.partition(".")
        if kind == "callback":
            return "WGPU" + pascal(name) + "CallbackInfo"
        if kind in ("enum", "bitflag", "object", "struct"):
            return "WGPU" + pascal(name)
        sys.exit(f"gen_webgpu_api.py: no C spelling for type `{t}` ({context_name})")

    def decl(self, m, where):
        """C declarations for one struct member or argument (arrays give two)."""
        t = m["type"]
        name = camel(m["name"])
        ptr = m.get("pointer")
        if t.startswith("array<"):
            inner = self.ctype(t[len("array<"):-1], where)
            const = " const" if ptr != "mutable" else ""
            return [f"size_t {camel(singular(m['name']))}Count", f"{inner}{const} * {name}"]
        base = self.ctype(t, where)
        if ptr == "immutable":
            return [f"{base} const * {name}"]
        if ptr == "mutable":
            return [f"{base} * {name}"]
        if base == "void":
            sys.exit(f"gen_webgpu_api.py: bare void in {where}")
        return [f"{base} {name}"]

    def return_type(self, obj_method, f):
        r = f.get("returns")
        if f.get("callback"):
            return "WGPUFuture"
        if not r:
            return "void"
        t = r["type"]
        if t.startswith("c_void"):
            return "void const *" if "const" in obj_method else "void *"
        return self.ctype(t, obj_method)

    # -- emission -----------------------------------------------------------------------------

    def enum_value(self, index):
        return (self.enum_prefix << 16) | index

    def struct_order(self):
        """Structs in an order where by-value members come first."""
        order, state = [], {}

        def deps(sname):
            for m in self.structs[sname].get("members", []) or []:
                t = m["type"]
                if m.get("pointer") or t.startswith("array<"):
                    continue
                kind, _, name = t.partition(".")
                if kind == "struct":
                    yield name

        def visit(sname):
            if state.get(sname) == "done":
                return
            if state.get(sname) == "active":
                sys.exit(f"gen_webgpu_api.py: struct cycle through `{sname}`")
            state[sname] = "active"
            for d in deps(sname):
                visit(d)
            state[sname] = "done"
            order.append(sname)

        for s in sorted(self.used_structs):
            visit(s)
        return order

    def emit(self, source_name):
        out = []
        w = out.append
        w("// Generated by tools/gen_webgpu_api.py from " + source_name + ". Do not edit.")
        w("//")
        w("// The compute subset of the standard WebGPU C API (webgpu.h) that Scellis uses, declared")
        w("// here because Dawn is loaded at run time with dlopen. Names and layouts are those of")
        w("// webgpu.h; only function-pointer types are declared (no prototypes), and")
        w("// SCELLIS_WGPU_PROCS lists every entry point the loader resolves.")
        w("#pragma once")
        w("// clang-format off")
        w("")
        w("#include <stddef.h>")
        w("#include <stdint.h>")
        w("")
        # constants
        sentinel = {"uint32_max": "UINT32_MAX", "uint64_max": "UINT64_MAX",
                    "usize_max": "SIZE_MAX"}
        for c in self.doc.get("constants", []):
            if c["value"] in sentinel:
                w(f"#define WGPU_{c['name'].upper()} ({sentinel[c['value']]})")
        w("")
        w("typedef uint64_t WGPUFlags;")
        w("typedef uint32_t WGPUBool;")
        w("")
        for o in sorted(self.used_objects):
            p = pascal(o)
            w(f"typedef struct WGPU{p}Impl* WGPU{p};")
        w("")
        w("typedef struct WGPUStringView WGPUStringView;")
        w("typedef struct WGPUChainedStruct WGPUChainedStruct;")
        for s in sorted(self.used_structs):
            p = pascal(s)
            w(f"typedef struct WGPU{p} WGPU{p};")
        for c in sorted(self.used_callbacks):
            p = pascal(c)
            w(f"typedef struct WGPU{p}CallbackInfo WGPU{p}CallbackInfo;")
        w("")
        for e in sorted(self.used_enums):
            self.emit_enum(w, self.enums[e])
        for b in sorted(self.used_bitflags):
            self.emit_bitflag(w, self.bitflags[b])
        w("struct WGPUStringView {")
        w("  char const * data;")
        w("  size_t length;")
        w("};")
        w("")
        w("struct WGPUChainedStruct {")
        w("  struct WGPUChainedStruct * next;")
        w("  WGPUSType sType;")
        w("};")
        w("")
        for c in sorted(self.used_callbacks):
            cb = self.callbacks[c]
            args = []
            for a in cb.get("args", []):
                args += self.decl(a, "callback " + c)
            args += ["void* userdata1", "void* userdata2"]
            w(f"typedef void (*WGPU{pascal(c)}Callback)({', '.join(args)});")
        w("")
        for c in sorted(self.used_callbacks):
            cb = self.callbacks[c]
            p = pascal(c)
            w(f"struct WGPU{p}CallbackInfo {{")
            w("  WGPUChainedStruct * nextInChain;")
            if cb.get("style", "callback_mode") == "callback_mode":
                w("  WGPUCallbackMode mode;")
            elif cb["style"] != "immediate":
                sys.exit(f"gen_webgpu_api.py: unknown callback style `{cb['style']}`")
            w(f"  WGPU{p}Callback callback;")
            w("  void* userdata1;")
            w("  void* userdata2;")
            w("};")
            w("")
        for s in self.struct_order():
            self.emit_struct(w, self.structs[s])
        # function pointer types
        procs = []
        for f in FUNCTIONS:
            fn = self.functions[f]
            procs.append((pascal(f), self.return_type(f, fn), self.args(fn, None, f)))
        for obj, methods in METHODS.items():
            for m in methods:
                fn = self.method(obj, m)
                procs.append((pascal(obj) + pascal(m), self.return_type(m, fn),
                              self.args(fn, obj, f"{obj}.{m}")))
        for obj in RELEASED_OBJECTS:
            p = pascal(obj)
            procs.append((p + "AddRef", "void", [f"WGPU{p} {camel(obj)}"]))
            procs.append((p + "Release", "void", [f"WGPU{p} {camel(obj)}"]))
        for s in FREE_MEMBERS:
            p = pascal(s)
            procs.append((p + "FreeMembers", "void", [f"WGPU{p} {camel(s)}"]))
        for name, ret, args in procs:
            w(f"typedef {ret} (*WGPUProc{name})({', '.join(args) if args else 'void'});")
        w("")
        w("// X(Name): the entry point `wgpu##Name` of type `WGPUProc##Name`.")
        w("#define SCELLIS_WGPU_PROCS(X) \\")
        for i, (name, _, _) in enumerate(procs):
            w(f"  X({name})" + (" \\" if i + 1 < len(procs) else ""))
        w("")
        # name lookups
        w("namespace scellis::runtime::webgpu {")
        w("")
        w("// The YAML's entry name in lowercase with '-' for '_' (WGPUBackendType_Vulkan ->")
        w("// \"vulkan\", WGPUAdapterType_DiscreteGPU -> \"discrete-gpu\"); nullptr for a value the")
        w("// API description does not know (Dawn's own extensions).")
        for e in NAMED_ENUMS:
            en = self.enums[e]
            p = pascal(e)
            w(f"inline const char* {p}Name(WGPU{p} value) {{")
            w("  switch (static_cast<uint32_t>(value)) {")
            for i, entry in enumerate(en["entries"]):
                if entry is None:
                    continue
                label = entry["name"].lower().replace("_", "-")
                w(f"    case 0x{self.enum_value(i):08X}u: return \"{label}\";")
            w("    default: return nullptr;")
            w("  }")
            w("}")
            w("")
        w("}  // namespace scellis::runtime::webgpu")
        w("// clang-format on")
        return "\n".join(out) + "\n"

    def args(self, fn, obj, where):
        args = []
        if obj is not None:
            args.append(f"WGPU{pascal(obj)} {camel(obj)}")
        for a in fn.get("args", []) or []:
            args += self.decl(a, where)
        if fn.get("callback"):
            cb = fn["callback"].partition(".")[2]
            args.append(f"WGPU{pascal(cb)}CallbackInfo callbackInfo")
        return args

    def emit_enum(self, w, e):
        p = pascal(e["name"])
        w(f"typedef enum WGPU{p} {{")
        for i, entry in enumerate(e["entries"]):
            if entry is None:
                continue
            w(f"  WGPU{p}_{pascal(entry['name'])} = 0x{self.enum_value(i):08X},")
        w(f"  WGPU{p}_Force32 = 0x7FFFFFFF")
        w(f"}} WGPU{p};")
        w("")

    def emit_bitflag(self, w, b):
        p = pascal(b["name"])
        w(f"typedef WGPUFlags WGPU{p};")
        values = {}
        for i, entry in enumerate(b["entries"]):
            if "value_combination" in entry:
                v = 0
                for part in entry["value_combination"]:
                    v |= values[part]
            else:
                v = 0 if i == 0 else 1 << (i - 1)
            values[entry["name"]] = v
            w(f"static constexpr WGPU{p} WGPU{p}_{pascal(entry['name'])} = 0x{v:016X};")
        w("")

    def emit_struct(self, w, s):
        p = pascal(s["name"])
        w(f"struct WGPU{p} {{")
        kind = s["type"]
        if kind in ("extensible", "extensible_callback_arg"):
            w("  WGPUChainedStruct * nextInChain;")
        elif kind == "extension":
            w("  WGPUChainedStruct chain;")
        elif kind != "standalone":
            sys.exit(f"gen_webgpu_api.py: unknown struct kind `{kind}` for `{s['name']}`")
        for m in s.get("members", []) or []:
            for d in self.decl(m, "struct " + s["name"]):
                w(f"  {d};")
        w("};")
        w("")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "src", "runtime", "backends", "webgpu", "webgpu_api.h")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("yaml", help="path to webgpu.yml")
    ap.add_argument("-o", "--output", default=default_out)
    ns = ap.parse_args()
    with open(ns.yaml, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    api = Api(doc)
    api.collect()
    text = api.emit(os.path.basename(ns.yaml))
    with open(ns.output, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
