"""The checkpoint's safetensors layout, read for the tests: an 8-byte little-endian header length,
the JSON header (each tensor's dtype, shape and data offsets), then the tensors' bytes."""
import json
import struct


def read_safetensors(path):
    """(header without its metadata, {name: the tensor's bytes})."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    data = {k: raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items()}
    return header, data
