"""newt never probes at run time whether an object can do something:
what the UI needs of a session is declared in
newt/ui/session_api.py, what the agent needs of a provider in
newt/memory/provider.py (a provider returns itself from `anchored()`,
`calibrating()`, `summarizing()`), checked by mypy, and called directly; and no
`isinstance` asks whether an object fits a Protocol.

A probe is `getattr(obj, "name", ...)` or `hasattr(obj, "name")` with the
name written out. A computed name (`getattr(self, f"cmd_{name}")`) is dispatch,
not a probe, and is allowed.
"""

from __future__ import annotations

from functools import cache

from tests.support.paths import REPO
from tests.support.probes import probes

NEWT = REPO / "newt"
# Questions about things newt does not define, each with its reason.
FOREIGN = {
    # sqlite3 sets the code only on errors it raises itself, not on one made in Python
    "newt/store/db.py": {"sqlite_errorcode"},
    # the stdlib's feature test for the extraction filter (backported to some 3.11s)
    "newt/local/setup/build.py": {"data_filter"},
}


def test_newt_has_no_capability_probes() -> None:
    found = []
    for path in sorted(NEWT.rglob("*.py")):
        where = path.relative_to(REPO).as_posix()
        allowed = FOREIGN.get(where, set())
        found += [
            probe
            for probe in probes(path.read_text(encoding="utf-8"), where)
            if probe.split("'")[1] not in allowed
        ]
    assert not found, "declare it in a Protocol and call it:\n" + "\n".join(found)


def test_every_foreign_probe_is_still_there() -> None:
    # a probe that went leaves the list, so the list cannot hide a new one
    for where, names in FOREIGN.items():
        seen = {p.split("'")[1] for p in probes((REPO / where).read_text(encoding="utf-8"), where)}
        assert names <= seen, (where, names - seen)


def test_the_check_sees_a_probe_and_lets_dispatch_pass() -> None:
    # the test would be worthless if it missed the shapes it is written for
    source = (
        'a = getattr(session, "start_background_work", None)\n'
        'b = hasattr(session, "probed")\n'
        'c = getattr(self, f"cmd_{name}")\n'
    )
    assert probes(source, "sample.py") == [
        "sample.py:1: getattr(..., 'start_background_work')",
        "sample.py:2: hasattr(..., 'probed')",
    ]


@cache
def _protocols_and_classes() -> tuple[set[str], dict[str, list[str]]]:
    import ast

    protocols: set[str] = set()
    defined: dict[str, list[str]] = {}
    for path in sorted(NEWT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(path.relative_to(REPO).as_posix())
                bases = {b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases}
                if bases & {"Protocol", "typing.Protocol"}:
                    protocols.add(node.name)
    return protocols, defined


def test_no_isinstance_asks_whether_an_object_fits_a_protocol() -> None:
    """What an object can do is declared (a method, a flag, a typed parameter), never
    asked of its type at run time: no runtime_checkable Protocol, no isinstance on one."""
    import ast

    protocols, _ = _protocols_and_classes()
    found = []
    for path in sorted(NEWT.rglob("*.py")):
        where = path.relative_to(REPO).as_posix()
        text = path.read_text(encoding="utf-8")
        if "runtime_checkable" in text:
            found.append(f"{where}: runtime_checkable")
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"isinstance", "issubclass"}
                and len(node.args) == 2
            ):
                named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if named & protocols:
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "\n".join(found)


def test_no_class_name_is_defined_twice() -> None:
    """One name per thing: a class name means one class in newt/."""
    _, defined = _protocols_and_classes()
    twice = {name: where for name, where in defined.items() if len(where) > 1}
    assert not twice, twice
