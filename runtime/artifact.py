#!/usr/bin/env python3
"""runtime/artifact.py: reads covenant artifacts (runtime/README.md) from Python.

    python3 runtime/artifact.py ART                 # prints the manifest
    python3 runtime/artifact.py ART --blob NAME OUT # writes one blob's bytes
    python3 runtime/artifact.py ART --zero-seed OUT # the manifest with every blob's
                                                    # checksum that of zero bytes (a fuzz seed)
As a module: read(path) -> (manifest, data), write(path, manifest, data)
(the container laid out again, every checksum recomputed: what a hand edit
that keeps the file consistent looks like; tests/runtime/hostile_artifact.sh).
Uses the standard library only (it runs on the GPU machine too)."""
import json
import struct
import sys

MAGIC = b"\x7fCOVART\n"


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def read(path):
    raw = open(path, "rb").read()
    if raw[:8] != MAGIC:
        raise ValueError("%s: not a covenant artifact" % path)
    version, hbytes, fbytes, moff, mbytes, mfnv, doff, dbytes = struct.unpack_from("<IIQQQQQQ", raw, 8)
    if fbytes != len(raw):
        raise ValueError("%s: truncated or padded (%d bytes, header says %d)" % (path, len(raw), fbytes))
    manifest = json.loads(raw[moff:moff + mbytes].decode("utf-8"))
    return manifest, raw[doff:doff + dbytes]


def write(path, manifest, data, version=None, checksums=True):
    """Writes manifest and data section as an artifact: header sizes, the
    manifest's checksum and (with checksums) every blob's recomputed."""
    if checksums:
        for b in manifest["blobs"]:
            b["fnv1a64"] = "%016x" % fnv1a64(data[b["offset"]:b["offset"] + b["bytes"]])
    text = json.dumps(manifest, indent=1).encode("utf-8")
    doff = (64 + len(text) + 255) // 256 * 256
    head = MAGIC + struct.pack("<IIQQQQQQ", version or manifest.get("version", 1), 64, doff + len(data), 64,
                               len(text), fnv1a64(text), doff, len(data))
    open(path, "wb").write(head + text + bytes(doff - 64 - len(text)) + bytes(data))


def blob(manifest, data, name):
    for b in manifest["blobs"]:
        if b["name"] == name:
            return data[b["offset"]:b["offset"] + b["bytes"]]
    raise KeyError(name)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    m, data = read(sys.argv[1])
    if len(sys.argv) == 5 and sys.argv[2] == "--blob":
        open(sys.argv[4], "wb").write(blob(m, data, sys.argv[3]))
    elif len(sys.argv) == 4 and sys.argv[2] == "--zero-seed":
        off = 0
        for b in m["blobs"]:
            b["bytes"] = min(b["bytes"], 65536 - off)
            b["offset"] = off
            b["fnv1a64"] = "%016x" % fnv1a64(bytes(b["bytes"]))
            off = (off + b["bytes"] + 255) // 256 * 256
        open(sys.argv[3], "w").write(json.dumps(m, indent=1))
    else:
        print(json.dumps(m, indent=1))


if __name__ == "__main__":
    main()
