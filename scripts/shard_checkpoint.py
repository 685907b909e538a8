#!/usr/bin/env python3
"""Split a .safetensors file into N shards with a model.safetensors.index.json, as Hugging
Face's `save_pretrained(max_shard_size=...)` lays them out, using the `safetensors` package's
own writer (every dtype: F32, F16, BF16, FP8, integers).

Usage: python scripts/shard_checkpoint.py MODEL.safetensors OUT_DIR N
"""

import json
import os
import struct
import sys

import numpy as np
from safetensors._safetensors_rust import TensorSpec, serialize_file

TORCH = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
         "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu",
         "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
         "BOOL": "bool"}


def main(src, out, n):
    with open(src, "rb") as f:
        hlen = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(hlen))
        data = np.frombuffer(f.read(), dtype=np.uint8)
    meta = header.pop("__metadata__", None)
    names = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    total = sum(e["data_offsets"][1] - e["data_offsets"][0] for e in header.values())
    os.makedirs(out, exist_ok=True)
    shards, cur, size = [], [], 0
    for k in names:
        cur.append(k)
        size += header[k]["data_offsets"][1] - header[k]["data_offsets"][0]
        if size >= total / n * (len(shards) + 1) and len(shards) < n - 1:
            shards.append(cur)
            cur = []
    shards.append(cur)
    weight_map = {}
    for i, part in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        keep = {k: np.ascontiguousarray(data[slice(*header[k]["data_offsets"])]) for k in part}
        specs = {k: TensorSpec(dtype=TORCH[header[k]["dtype"]], shape=header[k]["shape"],
                               data_ptr=keep[k].ctypes.data, data_len=keep[k].nbytes) for k in part}
        serialize_file(specs, os.path.join(out, fname), meta)
        weight_map.update({k: fname for k in part})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    print(f"{src} -> {out}: {len(names)} tensors in {len(shards)} shards")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
