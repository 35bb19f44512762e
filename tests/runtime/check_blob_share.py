#!/usr/bin/env python3
"""tests/runtime/check_blob_share.py ART MIN_SHARED: every group of
byte-identical blobs of an artifact (same size and FNV-1a checksum, the
bytes compared too) is stored once, all of them at one offset, and at
least MIN_SHARED blobs point at an earlier one's bytes."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runtime"))
import artifact  # noqa: E402


def main():
    manifest, data = artifact.read(sys.argv[1])
    want = int(sys.argv[2])
    first, offsets, shared = {}, set(), 0
    for b in manifest["blobs"]:
        if not b["bytes"]:
            continue
        body = bytes(data[b["offset"]:b["offset"] + b["bytes"]])
        at = first.setdefault(body, b["offset"])
        if at != b["offset"]:
            print("FAIL blob '%s': a copy of the bytes at %d stored again at %d" % (b["name"], at, b["offset"]))
            return 1
        shared += b["offset"] in offsets
        offsets.add(b["offset"])
    print("%d blobs, %d stored once for several, %d bytes of data" % (len(manifest["blobs"]), shared, len(data)))
    if shared < want:
        print("FAIL: %d shared blobs, expected at least %d" % (shared, want))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
