#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""layering.py [--verbose] DAEMON_DIR | --selftest: cpuhpd's floor plan, checked.

Reads every .c and .h file under DAEMON_DIR (daemon/cpuhpd), builds the
file-level call graph (file F calls file G when F names a function that G
defines: a non-static function of a .c file, or any function defined in a
header; macros of the daemon's headers are expanded into what they name)
and fails, naming the calls, when

  1. a file calls a function of a folder that is not its own and not below
     it in LAYERS (callbacks through pointers are the only way up);
  2. the largest circle of files that call each other (strongly connected
     component) has more than MAX_CIRCLE files;
  3. more than MAX_MUTUAL pairs of files call each other both ways.

A folder missing from LAYERS fails too (say where it belongs), and so does
a folder of LAYERS that holds no source file.  The same
layers are drawn in daemon/cpuhpd/README.md.  --verbose lists every call
between files; --selftest runs the rules on made-up trees that must fail.
Exit 0 when every rule holds, 1 otherwise, 2 on bad usage.
"""
import os
import re
import sys

# Bottom first.  A file may call files of its own folder and of the folders
# of earlier tiers; folders of one tier do not call each other.  "." is
# cpuhpd/ itself: main, the feature table, start, stop, adoption.
LAYERS = [
    ["base"],
    ["sysfs"],
    ["core"],
    ["leases", "states"],
    ["hotplug"],
    ["ops"],
    ["."],
]
MAX_CIRCLE = 4
MAX_MUTUAL = 4

TOKEN = re.compile(r"[A-Za-z_]\w*|\S")
NOT_NAMES = {"__attribute__", "__typeof__", "typeof", "sizeof", "if", "while", "for",
             "switch", "return", "_Alignas", "_Static_assert", "__extension__"}


def strip(text):
    """@text without comments, string and character literals, and line
    continuations; returns (code, macros) where macros maps each #define's
    name to its body (the directives themselves are blanked)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j) or " ")
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" 0 ")
            i = j + 1
        else:
            out.append(c)
            i += 1
    code = "".join(out).replace("\\\n", " ")
    macros = {}
    lines = []
    for line in code.split("\n"):
        s = line.strip()
        if s.startswith("#"):
            m = re.match(r"#\s*define\s+([A-Za-z_]\w*)(\([^)]*\))?(.*)", s)
            if m:
                macros[m.group(1)] = m.group(3)
            lines.append("")
        else:
            lines.append(line)
    return "\n".join(lines), macros


def parse(code):
    """(definitions, references) of one file's code: definitions as
    {name: is_static}, references as the identifiers named in function
    bodies and initializers (not in prototypes or type definitions)."""
    toks = TOKEN.findall(code)
    defs, refs = {}, []
    depth, decl, counting = 0, [], False
    for t in toks:
        if depth == 0:
            if t == ";":
                if "=" in decl:
                    refs.extend(x for x in decl[decl.index("=") + 1:] if x[0].isalpha() or x[0] == "_")
                decl = []
                continue
            if t != "{":
                decl.append(t)
                continue
            name = function_name(decl)
            counting = "=" in decl or name is not None
            if name and "=" not in decl:
                defs[name] = "static" in decl
            if "=" in decl:
                refs.extend(x for x in decl[decl.index("=") + 1:] if x[0].isalpha() or x[0] == "_")
            decl = []
            depth = 1
            continue
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                counting = False
        elif counting and (t[0].isalpha() or t[0] == "_"):
            refs.append(t)
    return defs, refs


def function_name(decl):
    """The name a declaration defines as a function, or None (struct, enum...)."""
    paren, i = 0, 0
    while i < len(decl):
        t = decl[i]
        if t == "(" and paren == 0:
            prev = decl[i - 1] if i else ""
            if prev in NOT_NAMES:
                # skip the attribute's own parentheses
                k, level = i, 0
                while k < len(decl):
                    level += decl[k] == "("
                    level -= decl[k] == ")"
                    k += 1
                    if level == 0:
                        break
                i = k
                continue
            if re.match(r"[A-Za-z_]\w*$", prev) and ")" in decl[i:]:
                return prev
            return None
        paren += t == "("
        paren -= t == ")"
        i += 1
    return None


def load(root):
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith((".c", ".h")):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as fh:
                    files[rel] = fh.read()
    return files


def graph(files):
    """({file: {name: is_static}}, {(caller, callee): set(names)})"""
    parsed, macros = {}, {}
    for rel, text in files.items():
        code, m = strip(text)
        parsed[rel] = parse(code)
        for name, body in m.items():
            macros.setdefault(name, body)
    # Who defines each callable name: non-static functions of .c files,
    # every function a header defines.
    owner = {}
    for rel, (defs, _) in parsed.items():
        for name, static in defs.items():
            if rel.endswith(".h") or not static:
                owner.setdefault(name, rel)
    edges = {}

    def expand(name, seen):
        if name in seen or name not in macros:
            return []
        seen.add(name)
        names = [t for t in TOKEN.findall(macros[name]) if t[0].isalpha() or t[0] == "_"]
        out = list(names)
        for t in names:
            out.extend(expand(t, seen))
        return out

    for rel, (defs, refs) in parsed.items():
        for ref in refs:
            for name in [ref] + expand(ref, set()):
                if name in defs:
                    continue  # its own (a static function shadows nothing else)
                to = owner.get(name)
                if to and to != rel:
                    edges.setdefault((rel, to), set()).add(name)
    return parsed, edges


def folder(rel):
    d = os.path.dirname(rel)
    return d.split(os.sep)[0] if d else "."


def tiers():
    return {f: i for i, tier in enumerate(LAYERS) for f in tier}


def sccs(nodes, edges):
    """Tarjan's strongly connected components, iteratively."""
    succ = {n: sorted({b for (a, b) in edges if a == n}) for n in nodes}
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                on.add(v)
            recurse = False
            for k in range(i, len(succ[v])):
                w = succ[v][k]
                if w not in index:
                    work.append((v, k + 1))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return out


def calls(edges, a, b):
    return ", ".join(sorted(edges[(a, b)]))


SELFTEST = {
    # an upward call, hidden in a macro of a header below
    "base/log.h": "#define LOG(x) cpuhpd_top(x)\nvoid cpuhpd_top(int x);\n",
    "base/log.c": "#include \"log.h\"\nvoid cpuhpd_base(void) { LOG(1); }\n",
    # a prototype and a static function of the same name are not calls
    "core/a.c": "void cpuhpd_a(void);\nstatic void cpuhpd_b(void) {}\n"
                "void cpuhpd_a(void) { cpuhpd_b(); cpuhpd_base(); }\n",
    "core/b.c": "void cpuhpd_b(void) {}\n",
    "top.c": "void cpuhpd_top(int x) { (void)x; }\n"
             "static void (*const hook)(void) = cpuhpd_a;\n",
}


def selftest():
    """The rules on made-up trees: each must fail where it should, naming the call."""
    import tempfile

    def run(tree):
        with tempfile.TemporaryDirectory() as d:
            for rel, text in tree.items():
                os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            _, edges = graph(load(d))
            return {(a, b): sorted(n) for (a, b), n in edges.items()}

    bad = 0

    def expect(what, ok):
        nonlocal bad
        print(f"layering selftest: {'ok' if ok else 'FAILED'}: {what}")
        bad += not ok

    e = run(SELFTEST)
    expect("a macro's call is the caller's", e.get(("base/log.c", "top.c")) == ["cpuhpd_top"])
    expect("a prototype and a static function are no calls", ("core/a.c", "core/b.c") not in e)
    expect("an initializer's function is a call", e.get(("top.c", "core/a.c")) == ["cpuhpd_a"])
    expect("a call down is kept", e.get(("core/a.c", "base/log.c")) == ["cpuhpd_base"])
    ring = {f"core/f{i}.c": f"void cpuhpd_f{i}(void) {{ cpuhpd_f{(i + 1) % 5}(); }}\n"
            for i in range(5)}
    comps = sccs(set(ring), run(ring))
    expect("five files in a ring are one circle of 5", max(len(c) for c in comps) == 5)
    pairs = {}
    for i in range(5):
        pairs[f"core/p{i}.c"] = f"void cpuhpd_p{i}(void) {{ cpuhpd_q{i}(); }}\n"
        pairs[f"core/q{i}.c"] = f"void cpuhpd_q{i}(void) {{ cpuhpd_p{i}(); }}\n"
    e = run(pairs)
    expect("five pairs calling both ways are counted",
           len([1 for (a, b) in e if a < b and (b, a) in e]) == 5)
    with tempfile.TemporaryDirectory() as d:
        for rel, text in SELFTEST.items():
            os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
                f.write(text)
        import contextlib
        import io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = main([d])
        expect("the upward call fails rule 1 and is named",
               rc == 1 and "base/log.c calls cpuhpd_top of top.c" in out.getvalue())
    return 1 if bad else 0


def main(argv):
    if argv == ["--selftest"]:
        return selftest()
    verbose = "--verbose" in argv
    args = [a for a in argv if a != "--verbose"]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args and args[0] in ("-h", "--help") else 2
    root = args[0]
    if not os.path.isdir(root):
        print(f"layering: {root} is not a directory (give daemon/cpuhpd)", file=sys.stderr)
        return 2
    files = load(root)
    parsed, edges = graph(files)
    rank = tiers()
    failed = []

    unknown = sorted({folder(f) for f in files} - set(rank))
    for f in unknown:
        failed.append(f"folder {f}/ is in no layer: add it to LAYERS in {sys.argv[0]} "
                      f"and to the drawing in daemon/cpuhpd/README.md")
    missing = sorted(set(rank) - {folder(f) for f in files})
    for f in missing:
        failed.append(f"LAYERS names {f}/, which holds no source file: the floor plan "
                      f"and the daemon disagree")

    up = []
    for (a, b), names in sorted(edges.items()):
        fa, fb = folder(a), folder(b)
        if fa == fb or fa not in rank or fb not in rank:
            continue
        if rank[fb] >= rank[fa]:
            why = "the same tier" if rank[fb] == rank[fa] else "a layer above"
            up.append(f"  {a} calls {', '.join(sorted(names))} of {b} ({fb}/ is {why} {fa}/)")
    if up:
        failed.append("rule 1, a file calls only its own folder and the folders below it "
                      "(callbacks are the only way up):\n" + "\n".join(up))

    nodes = set(files)
    comps = sccs(nodes, edges)
    big = max(comps, key=len)
    if len(big) > MAX_CIRCLE:
        inner = [f"  {a} -> {b}: {calls(edges, a, b)}" for (a, b) in sorted(edges)
                 if a in big and b in big]
        failed.append(f"rule 2, at most {MAX_CIRCLE} files in a circle of calls: "
                      f"{len(big)} files call each other ({', '.join(big)}); the calls "
                      f"among them:\n" + "\n".join(inner))

    mutual = sorted((a, b) for (a, b) in edges if a < b and (b, a) in edges)
    if len(mutual) > MAX_MUTUAL:
        lines = [f"  {a} <-> {b}: {a} calls {calls(edges, a, b)}; {b} calls {calls(edges, b, a)}"
                 for a, b in mutual]
        failed.append(f"rule 3, at most {MAX_MUTUAL} pairs of files calling each other both "
                      f"ways: {len(mutual)} pairs:\n" + "\n".join(lines))

    if verbose:
        for (a, b), names in sorted(edges.items()):
            print(f"{a} -> {b}: {', '.join(sorted(names))}")
    circles = [c for c in comps if len(c) > 1]
    print(f"layering: {len(files)} files, {len(edges)} caller/callee file pairs; largest "
          f"circle {len(big)} file{'s' if len(big) != 1 else ''}"
          f"{' (' + ', '.join(big) + ')' if len(big) > 1 else ''}, {len(circles)} circle(s) in all; "
          f"{len(mutual)} mutual pair{'s' if len(mutual) != 1 else ''}"
          f"{': ' + '; '.join(a + ' <-> ' + b for a, b in mutual) if mutual and len(mutual) <= MAX_MUTUAL else ''}")
    for f in failed:
        print("layering: FAIL " + f)
    if not failed:
        print(f"layering: every call goes to its own folder or below; circles of at most "
              f"{MAX_CIRCLE} files, at most {MAX_MUTUAL} mutual pairs")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
