"""Which code a process has resident: the present pages of each of its mappings (/proc/PID/pagemap,
so run as root), and the binary's code pages attributed to the symbols they hold (`nm -S`), a page
shared by several crates split between them by bytes. A profiling aid for BENCHMARKS.md's footprint
profile, not part of scripts/bench.

Usage: python3 bench/pagemap.py PID BINARY    (BINARY: the executable PID runs)"""
import bisect
import collections
import os
import re
import struct
import subprocess
import sys

pid, binary = int(sys.argv[1]), sys.argv[2]
PAGE = 4096
maps = []
for line in open(f"/proc/{pid}/maps"):
    parts = line.split()
    lo, hi = (int(x, 16) for x in parts[0].split("-"))
    perms, off = parts[1], int(parts[2], 16)
    path = parts[5] if len(parts) > 5 else ""
    maps.append((lo, hi, perms, off, path))
pm = open(f"/proc/{pid}/pagemap", "rb")
def present(lo, hi):
    out = []
    pm.seek(lo // PAGE * 8)
    data = pm.read((hi - lo) // PAGE * 8)
    for i in range(len(data) // 8):
        (v,) = struct.unpack_from("<Q", data, i * 8)
        if v >> 63 & 1:
            out.append(lo + i * PAGE)
    return out
by_file = collections.Counter()
bin_pages = []  # (file offset of page, perms)
for lo, hi, perms, off, path in maps:
    if not path.startswith("/"):
        by_file["[anon] " + (path or "")] += len(present(lo, hi))
        continue
    pages = present(lo, hi)
    by_file[f"{os.path.basename(path)} {perms}"] += len(pages)
    if os.path.realpath(path) == os.path.realpath(binary):
        bin_pages += [(p - lo + off, perms) for p in pages]
for k, v in by_file.most_common():
    print(f"{v * 4 / 1024:7.2f} MiB  {k}")
# symbols by file offset: nm gives virtual addresses; map via section headers (vaddr - offset of the LOAD segments)
segs = []
for line in subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True).stdout.splitlines():
    m = re.match(r"\s+LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)", line)
    if m:
        segs.append(tuple(int(m.group(i), 16) for i in range(1, 5)) + (m.group(5),))
syms = []
for line in subprocess.run(["nm", "-C", "--defined-only", "-S", binary], capture_output=True, text=True).stdout.splitlines():
    p = line.split(" ", 3)
    if len(p) == 4 and p[2] in "tTwWrRdDbB":
        syms.append((int(p[0], 16), int(p[1], 16), p[3]))
syms.sort()
addrs = [s[0] for s in syms]
def crate(name: str) -> str:
    """The crate a demangled symbol belongs to: its first path segment (`<T as x::Y>` counts as T's)."""
    if name.startswith("sqlite3"):
        return "sqlite (C)"
    m = re.match(r"[<&*\s]*(?:const |mut |dyn )?([A-Za-z0-9_]+)::", name)
    return m.group(1) if m else "other: " + name[:30]


groups = collections.Counter()
for foff, perms in bin_pages:
    vaddr = None
    for off, va, fsz, msz, fl in segs:
        if off <= foff < off + fsz:
            vaddr = va + (foff - off)
    if vaddr is None or "x" not in perms:
        groups[f"[non-code {perms}]"] += 1
        continue
    # attribute the page to the crates of the symbols it overlaps, by bytes
    seen = collections.Counter()
    i = max(bisect.bisect_right(addrs, vaddr) - 1, 0)
    while i < len(syms) and syms[i][0] < vaddr + PAGE:
        a, sz, n = syms[i]
        ov = min(a + max(sz, 1), vaddr + PAGE) - max(a, vaddr)
        if ov > 0:
            seen[crate(n)] += ov
        i += 1
    tot = sum(seen.values()) or 1
    if not seen:
        groups["[no symbol]"] += 1
    for k, v in seen.items():
        groups[k] += v / tot
print("\nthe binary's resident pages by crate (a page shared by crates is split by bytes):")
for k, v in groups.most_common(400):
    print(f"{v * 4 / 1024:7.2f} MiB  {k}")
