"""The recorder package's house rules, checked on its sources with `ast`
(plain python3, no torch): no class over 250 lines, no function over 70, no
private name (`_x`) imported from another module of the package, no import
circle among its modules (function-level imports included), and no module
but torch_compat.py naming a private `torch._*` attribute or importing from
a private torch module (every such entry point has an accessor there, with
the releases that have it and a self-check).

`violations(package_dir)` is usable on any copy of the package, so that the
check can be shown to fail on a tree that breaks the rules.

Run: python3 -m unittest discover -s recorder/tests
"""

import ast
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(os.path.dirname(HERE), "capsim_recorder")

MAX_CLASS_LINES = 250
MAX_FUNCTION_LINES = 70
COMPAT_MODULE = "torch_compat"


def modules(package_dir):
    """{dotted module name relative to the package ("" for its __init__,
    "cudagraph.session", ...): parsed tree}."""
    out = {}
    for d, _, files in os.walk(package_dir):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(d, f), package_dir)[:-3].replace(os.sep, ".")
            name = rel[: -len(".__init__")] if rel.endswith(".__init__") else ("" if rel == "__init__" else rel)
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                out[name] = ast.parse(fh.read(), filename=os.path.join(d, f))
    return out


def is_package(name, mods):
    return any(m.startswith(name + ".") for m in mods) or name == ""


def resolve(importer, node, mods):
    """The package modules an ImportFrom/Import names (relative or
    `capsim_recorder.`-absolute), as (module, imported names)."""
    if isinstance(node, ast.Import):
        out = []
        for a in node.names:
            if a.name == "capsim_recorder" or a.name.startswith("capsim_recorder."):
                out.append((a.name[len("capsim_recorder."):] if "." in a.name else "", []))
        return out
    if node.level == 0:
        if not (node.module or "").startswith("capsim_recorder"):
            return []
        base = (node.module or "")[len("capsim_recorder."):] if "." in (node.module or "") else ""
    else:
        parts = importer.split(".") if importer else []
        # An __init__ is its package; a module's package is its parent.
        package = parts if is_package(importer, mods) else parts[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    out = []
    names = [a.name for a in node.names]
    for n in names:
        sub = f"{base}.{n}" if base else n
        if sub in mods:
            out.append((sub, []))  # a submodule
        else:
            out.append((base, [n]))
    return out


def import_graph(mods):
    graph = {m: set() for m in mods}
    private = []
    for m, tree in mods.items():
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target, names in resolve(m, node, mods):
                if target in mods and target != m:
                    graph[m].add(target)
                for n in names:
                    if n.startswith("_") and not n.startswith("__"):
                        private.append(f"{m or '__init__'}:{node.lineno}: imports {n} from {target or '__init__'}")
    return graph, private


def cycles(graph):
    """The strongly connected components with more than one module (or a
    module importing itself), by Tarjan's algorithm."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
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
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def torch_private_uses(m, tree):
    """`torch._x...` attributes and imports from private torch modules."""
    out = []

    def private(dotted):
        parts = dotted.split(".")
        return parts[0] == "torch" and any(p.startswith("_") and not p.startswith("__") for p in parts[1:])

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
            if node.attr.startswith("_") and not node.attr.startswith("__"):
                out.append(f"{m}:{node.lineno}: torch.{node.attr}")
        elif isinstance(node, ast.Import):
            out += [f"{m}:{node.lineno}: import {a.name}" for a in node.names if private(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("torch"):
            names = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            if private(node.module) or names:
                out.append(f"{m}:{node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}")
    return out


def sizes(mods):
    """(too-long classes, too-long functions) as 'module:line name (n lines)'."""
    classes, functions = [], []
    for m, tree in mods.items():
        for node in ast.walk(tree):
            n = getattr(node, "end_lineno", 0) - getattr(node, "lineno", 0) + 1
            where = f"{m or '__init__'}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ClassDef) and n > MAX_CLASS_LINES:
                classes.append(f"{where} class {node.name} ({n} lines)")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and n > MAX_FUNCTION_LINES:
                functions.append(f"{where} def {node.name} ({n} lines)")
    return classes, functions


def violations(package_dir):
    """Every broken rule in the package at `package_dir`, by rule."""
    mods = modules(package_dir)
    graph, private = import_graph(mods)
    classes, functions = sizes(mods)
    torch_private = [u for m, tree in mods.items() if m != COMPAT_MODULE for u in torch_private_uses(m, tree)]
    return {
        "classes": classes,
        "functions": functions,
        "private imports": private,
        "cycles": [" -> ".join(c) for c in cycles(graph)],
        "torch private names": torch_private,
    }


class PackageLimitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.found = violations(PACKAGE)

    def test_no_class_over_250_lines(self):
        self.assertEqual(self.found["classes"], [])

    def test_no_function_over_70_lines(self):
        self.assertEqual(self.found["functions"], [])

    def test_no_private_name_imported_across_modules(self):
        self.assertEqual(self.found["private imports"], [])

    def test_no_import_circle(self):
        self.assertEqual(self.found["cycles"], [])

    def test_only_torch_compat_names_private_torch(self):
        self.assertEqual(self.found["torch private names"], [])

    def test_the_checks_can_fail(self):
        """Each check finds a planted violation."""
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            pkg = os.path.join(d, "capsim_recorder")
            os.makedirs(os.path.join(pkg, "sub"))
            body = "\n".join(f"    x{i} = {i}" for i in range(MAX_CLASS_LINES))
            files = {
                "__init__.py": "",
                "a.py": "from .b import _hidden\nimport torch\nv = torch._dynamo\n",
                "b.py": "from . import a\n_hidden = 1\n",
                "sub/__init__.py": "",
                "sub/c.py": f"class Big:\n{body}\n\ndef long():\n" + "    pass\n" * MAX_FUNCTION_LINES,
                "torch_compat.py": "import torch._dynamo\n",
            }
            for name, text in files.items():
                with open(os.path.join(pkg, name), "w", encoding="utf-8") as f:
                    f.write(text)
            found = violations(pkg)
        self.assertEqual(len(found["classes"]), 1)
        self.assertEqual(len(found["functions"]), 1)
        self.assertEqual(found["private imports"], ["a:1: imports _hidden from b"])
        self.assertEqual(found["cycles"], ["a -> b"])
        self.assertEqual(found["torch private names"], ["a:3: torch._dynamo"])


if __name__ == "__main__":
    unittest.main()
