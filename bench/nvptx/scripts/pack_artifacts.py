#!/usr/bin/env python3
"""bench/nvptx/scripts/pack_artifacts.py: carrying artifacts larger than a device
call in pieces, and putting them together there, byte for byte.

    pack_artifacts.py pack OUTDIR PART_MB     # here (compile_models.sh calls it)
    pack_artifacts.py unpack PART STASH       # there (run_models.sh calls it)

A device call carries 64 MiB with the repository's tracked files (~26 MiB),
so resnet50's 50 MiB artifact cannot travel whole. `pack` writes
OUTDIR/part1, part2, ... of at most PART_MB MiB each, carried one per call:
  * a batch-32 artifact whose blobs (the weights) are byte-identical to its
    batch-1 artifact's travels "thin": the file with those blobs' bytes
    zeroed, gzip-compressed; `unpack` copies them back from the batch-1
    artifact (found by the blob's SHA-256);
  * a file still larger than a part is cut into chunks that go in
    successive parts;
  * an artifact is listed in the models.txt of the part where its last
    piece (or its batch-1 reference) arrives.
`unpack` keeps every piece in STASH (outside the repository, so the
next call's part, on the same machine, finds the earlier chunks), rebuilds
the part's artifacts there, checks each against the SHA-256 of the file
compiled here (pieces.json) and writes STASH/PARTNAME/models.txt for
run_models.py. Standard library only (it runs on the GPU machine too)."""
import gzip
import hashlib
import json
import os
import shutil
import struct
import sys

MAGIC = b"\x7fCOVART\n"


def blobs(raw):
    """(offset in the file, size) of every blob of an artifact (runtime/README.md)."""
    if raw[:8] != MAGIC:
        raise ValueError("not a covenant artifact")
    _, _, fbytes, moff, mbytes, _, doff, _ = struct.unpack_from("<IIQQQQQQ", raw, 8)
    if fbytes != len(raw):
        raise ValueError("truncated artifact")
    m = json.loads(raw[moff:moff + mbytes].decode("utf-8"))
    return [(doff + b["offset"], b["bytes"]) for b in m["blobs"]]


def sha(data):
    return hashlib.sha256(data).hexdigest()


def thin(raw, ref):
    """raw with the blobs that ref holds too zeroed; [(offset, size, sha)] of those."""
    have = {}
    for off, n in blobs(ref):
        have.setdefault(sha(ref[off:off + n]), (off, n))
    out, holes = bytearray(raw), []
    for off, n in blobs(raw):
        if n < 4096:
            continue
        h = sha(raw[off:off + n])
        if h in have:
            out[off:off + n] = bytes(n)
            holes.append((off, n, h))
    return bytes(out), holes


def pack(outdir, part_mb):
    limit = part_mb << 20
    alldir = os.path.join(outdir, "all")
    rows = [l.split() for l in open(os.path.join(alldir, "models.txt")) if l.strip()]
    b1 = {name: art for name, batch, art in rows if batch == "1"}
    work = os.path.join(outdir, "pieces")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    arts = []  # (name, batch, art, {sha, ref, holes, pieces: [(file, size)]})
    for name, batch, art in sorted(rows, key=lambda r: (r[1] != "1", r[0])):
        raw = open(os.path.join(alldir, art), "rb").read()
        info = {"sha256": sha(raw), "bytes": len(raw), "ref": None, "holes": []}
        data = raw
        if batch != "1" and name in b1:
            t, holes = thin(raw, open(os.path.join(alldir, b1[name]), "rb").read())
            if holes:
                data = gzip.compress(t, 6, mtime=0)
                info.update(ref=b1[name], holes=holes)
        chunk = limit - (1 << 20)
        pieces = []
        for k in range(0, len(data), chunk):
            f = "%s.%s%d" % (art, "thin" if info["ref"] else "chunk", k // chunk)
            open(os.path.join(work, f), "wb").write(data[k:k + chunk])
            pieces.append((f, min(chunk, len(data) - k)))
        info["pieces"] = pieces
        arts.append((name, batch, art, info))
    # first fit, largest first, but never before a piece this one needs
    parts, sizes, where = [], [], {}
    order = sorted(((a, i, p) for a in arts for i, p in enumerate(a[3]["pieces"])),
                   key=lambda x: (x[0][1] != "1", x[1], -x[2][1]))
    for (name, batch, art, info), i, (f, n) in order:
        lo = where.get(info["ref"], 0) if info["ref"] else 0
        if i > 0:
            lo = max(lo, where[(art, i - 1)] + 1)
        k = next((j for j in range(lo, len(parts)) if sizes[j] + n <= limit), None)
        if k is None:
            k = max(lo, len(parts))
            while len(parts) <= k:
                parts.append([])
                sizes.append(0)
        parts[k].append(f)
        sizes[k] += n
        where[(art, i)] = k
        where[art] = max(where.get(art, 0), k, where.get(info["ref"], 0) if info["ref"] else 0)
    for d in os.listdir(outdir):
        if d.startswith("part"):
            shutil.rmtree(os.path.join(outdir, d))
    for k, files in enumerate(parts):
        d = os.path.join(outdir, "part%d" % (k + 1))
        os.makedirs(d)
        for f in files:
            os.link(os.path.join(work, f), os.path.join(d, f))
        mine = [(name, batch, art, info) for name, batch, art, info in arts if where[art] == k]
        json.dump({art: info for _, _, art, info in mine}, open(os.path.join(d, "pieces.json"), "w"), indent=1)
        with open(os.path.join(d, "models.txt"), "w") as fm:
            for name, batch, art, _ in mine:
                fm.write("%s %s %s\n" % (name, batch, art))
        print("part%d: %.1f MiB carried: runs %s" % (k + 1, sizes[k] / 2**20,
                                                    " ".join("%s/b%s" % (n, b) for n, b, _, _ in mine) or "-"))


def unpack(part, stash):
    os.makedirs(stash, exist_ok=True)
    for f in os.listdir(part):
        if ".chunk" in f or ".thin" in f:
            shutil.copyfile(os.path.join(part, f), os.path.join(stash, f))
    pieces = json.load(open(os.path.join(part, "pieces.json")))
    name = os.path.basename(os.path.normpath(part))
    out = os.path.join(stash, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for art, info in pieces.items():
        data = b"".join(open(os.path.join(stash, f), "rb").read() for f, _ in info["pieces"])
        if info["ref"]:
            raw = bytearray(gzip.decompress(data))
            ref = open(os.path.join(stash, info["ref"]), "rb").read()
            have = {}
            for off, n in blobs(ref):
                have.setdefault(sha(ref[off:off + n]), (off, n))
            for off, n, h in info["holes"]:
                roff, rn = have[h]
                raw[off:off + n] = ref[roff:roff + rn]
            data = bytes(raw)
        if len(data) != info["bytes"] or sha(data) != info["sha256"]:
            raise SystemExit("unpack: %s does not match the artifact compiled here (sha256)" % art)
        open(os.path.join(stash, art), "wb").write(data)
        os.link(os.path.join(stash, art), os.path.join(out, art))
        print("unpack: %s rebuilt from %d piece(s)%s, sha256 %s... matches" %
              (art, len(info["pieces"]), " + blobs of " + info["ref"] if info["ref"] else "", info["sha256"][:16]))
    shutil.copyfile(os.path.join(part, "models.txt"), os.path.join(out, "models.txt"))
    print(out)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "pack":
        pack(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 4 and sys.argv[1] == "unpack":
        unpack(sys.argv[2], sys.argv[3])
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
