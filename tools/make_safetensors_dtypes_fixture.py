#!/usr/bin/env python3
"""Writes tests/store/engine_dtypes.safetensors from the safetensors format's rules alone
(an 8-byte little-endian header length, a JSON header, the data section), with struct and json,
so the C++ reader is checked against bytes it did not write. The values are listed beside the
reader's test (src/store/safetensors_test.cpp), which checks them element by element.

  python3 tools/make_safetensors_dtypes_fixture.py tests/store/engine_dtypes.safetensors
"""
import json
import struct
import sys

# name: (format dtype, shape, struct code per element, values)
TENSORS = {
    "f32": ("F32", [2, 2], "<f", [1.5, -0.0, 3.25e-3, -65504.0]),
    # binary16 bit patterns: 1.0, -2.0, 65504 (the largest), 2^-24 (the smallest subnormal),
    # +inf, a quiet NaN
    "f16": ("F16", [6], "<H", [0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00, 0x7E00]),
    "i32": ("I32", [5], "<i", [-2147483648, 2147483647, 0, -1, 16777217]),
    "u32": ("U32", [2, 2], "<I", [0, 4294967295, 2147483648, 16777217]),
    "mask": ("BOOL", [3], "<B", [1, 0, 1]),
    "scalar": ("I32", [], "<i", [-7]),
}


def main(path):
    header, data = {}, b""
    for name in sorted(TENSORS):
        dtype, shape, code, values = TENSORS[name]
        raw = b"".join(struct.pack(code, v) for v in values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()  # spaces after separators, unsorted keys: not our style
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


if __name__ == "__main__":
    main(sys.argv[1])
