#!/usr/bin/env python3
"""Writes a copy of an ACG with many harmless extra edges placed before the
real ones, so the real edges sit past a given index.

usage: gen_many_edges.py IN.json OUT.json N_EDGES [--reverse]

Extra scratchpads hang off DRAM (an edge there and one back): no compute
unit reaches them, so no schedule can use them and the mapper's costs must
not change. With --reverse the real edges come in reverse order as well.
"""
import json
import sys


def main():
    src, dst, n_edges = sys.argv[1], sys.argv[2], int(sys.argv[3])
    reverse = "--reverse" in sys.argv[4:]
    acg = json.load(open(src))
    real = list(acg["edges"])
    if reverse:
        real.reverse()
    dram = next(s["name"] for s in acg["storage"] if s["kind"] == "dram")
    extra = []
    i = 0
    while len(extra) + len(real) < n_edges:
        name = "spare%d" % i
        acg["storage"].append({"name": name, "kind": "scratchpad", "capacity": "1KiB"})
        extra.append({"from": dram, "to": name, "bandwidth_bytes_per_cycle": 1, "latency_cycles": 1})
        extra.append({"from": name, "to": dram, "bandwidth_bytes_per_cycle": 1, "latency_cycles": 1})
        i += 1
    acg["edges"] = extra[: n_edges - len(real)] + real
    json.dump(acg, open(dst, "w"), indent=1)


if __name__ == "__main__":
    main()
