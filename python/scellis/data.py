"""Datasets as the engine reads them (the trainer's IDX reader and its checks)."""
from . import _scellis


def load_dataset(source="fashion-mnist", split="train"):
    """{"images": float32 [count, features] in [0, 1], "labels": float32 [count] class indices,
    "files": [what was read]}. ``source``: "fashion-mnist" (Debian's dataset-fashion-mnist) or
    "idx:<images>,<labels>"; ``split``: "train" or "test". Refusals are ScellisError with the
    engine's code (a missing file, a bad header)."""
    return _scellis.load_dataset(source, split)
