#!/usr/bin/env python3
"""The crate map drawn from the imports, and the house rules checked on it.

For every crate under crates/: which retile crates it depends on (Cargo.toml),
which of its top-level modules use which (`crate::module` paths), and its share
of the project's Rust lines. Fails (exit 1) on:
  - a module that imports its own crate root (`use crate::Name` where Name is
    not a module: the root is the top of the crate, not its middle);
  - an import circle between the top-level modules of a crate;
  - a crate holding more than 30% of the project's lines.

    python3 tests/crate_map.py          # the map, then the verdict
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_SHARE = 0.30


def strip_comments(text):
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)  # strings
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//")[0] for line in text.split("\n"))


def modules_of(src):
    """Top-level module of every file under src (lib.rs and main.rs are the root)."""
    out = {}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src).parts
        if rel in (("lib.rs",), ("main.rs",)):
            out[f] = None
        else:
            out[f] = rel[0].removesuffix(".rs")
    return out


def crate_paths(text):
    """The first segment of every `crate::...` path, including inside `use crate::{a, b::c}`."""
    firsts = []
    for m in re.finditer(r"\bcrate::(\{[^}]*\}|\w+)", text):
        seg = m.group(1)
        if seg.startswith("{"):
            firsts += [s.strip().split("::")[0] for s in seg[1:-1].split(",") if s.strip()]
        else:
            firsts.append(seg)
    return firsts


def check_crate(crate):
    src = crate / "src"
    files = modules_of(src)
    top = {m for m in files.values() if m}
    edges, problems = {}, []
    for f, mod in files.items():
        if mod is None:
            continue
        for first in crate_paths(strip_comments(f.read_text())):
            if first in top:
                if first != mod:
                    edges.setdefault(mod, set()).add(first)
            elif first not in ("self", "super"):
                problems.append(f"{f.relative_to(ROOT)} imports its crate root: crate::{first}")
    # circles between top-level modules (strongly connected components)
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(top):
        if v not in index:
            visit(v)
    problems += [f"{crate.name}: import circle between modules {' <-> '.join(c)}" for c in sccs]
    return edges, problems


def deps_of(crate):
    text = (crate / "Cargo.toml").read_text()
    name = re.search(r'^name\s*=\s*"([^"]+)"', text, re.M).group(1)
    deps_section = re.search(r"^\[dependencies\](.*?)(^\[|\Z)", text, re.M | re.S)
    deps = sorted(set(re.findall(r"^(retile-[\w-]+)", deps_section.group(1), re.M))) if deps_section else []
    return name, deps


def lines_of(crate):
    return sum(len(f.read_text().splitlines()) for f in crate.rglob("*.rs"))


def main():
    crates = sorted(p for p in (ROOT / "crates").iterdir() if (p / "Cargo.toml").is_file())
    total = sum(lines_of(c) for c in crates) + sum(len(f.read_text().splitlines()) for f in (ROOT / "fuzz").rglob("*.rs"))
    problems = []
    print(f"{'crate':<16} {'lines':>6} {'share':>6}  depends on")
    for c in crates:
        name, deps = deps_of(c)
        n = lines_of(c)
        share = n / total
        print(f"{name:<16} {n:>6} {share:>6.1%}  {', '.join(d.removeprefix('retile-') for d in deps) or '-'}")
        if share > MAX_SHARE:
            problems.append(f"{name} holds {share:.0%} of the lines (at most {MAX_SHARE:.0%})")
        edges, found = check_crate(c)
        problems += found
        for mod in sorted(edges):
            print(f"{'':<16} {'':>6} {'':>6}    {mod} -> {', '.join(sorted(edges[mod]))}")
    if problems:
        print("\n".join(["", "house rules broken:"] + ["  " + p for p in problems]))
        return 1
    print("\nno import circles, no crate root imported from inside its crate, no crate over 30% of the lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
