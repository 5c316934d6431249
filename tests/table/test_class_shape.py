"""No mixin chains, and no class of more than 30 methods (issue 31).

A class that grows by inheriting from the project's own classes hides what it is: the
journal was once one object of about 94 methods built from eleven mixins, and every
consumer took all of it. The parts are composed instead (an object holds the parts it
uses, passed to its constructor), and these two tests keep it so. Every module of the
packages is imported and every class defined there is looked at as Python sees it
(its bases, its MRO).

**No mixin chain** (``firmware_host``, ``drivers``, ``tablesim``, ``tableview``,
``flooringest``). A class may derive from another class of the project only when that
base is an *interface of one level*: a root (it derives from no class of the project
itself), not a dataclass, and a leaf derives from it (nothing derives from the class
that derives from it). ``Game``/``Deal``, ``TableExtension``, ``Procedure``, the
drivers' ``Connection`` are such interfaces; a class may implement several
(``DiceProcedure(Procedure, TableExtension)``). Allowed besides:

- exceptions (a family of error types matched by ``except``);
- ``Protocol`` classes (a structural type: nothing is inherited at run time);
- device events, the subclasses of ``drivers.base.DeviceEvent``: a family of frozen
  values matched by type (``case WinningNumber()``), like exceptions;
- simulators and their parts: the simulated devices, their models and the test doubles
  (modules ``sim``, ``model``, ``simulators``, ``testing`` and ``reflink/device.py`` of
  ``drivers``, and what derives from them); they imitate hardware for tests and the
  demo, outside the runtime's rules;
- the rules core (``firmware_host/games/``): pure functions and frozen values, no state
  and no I/O, seen by the rest of the code only through ``Game`` and ``Deal``; its
  refinements of them (``DiscreteGame``, a game whose outcomes can be enumerated; the
  player-banked games' shared regulation, ``BankerGame``/``BankerDeal``/``BankerHands``)
  follow the regulations' own structure, as the module-size test leaves a game's rules
  in one place.

**At most 30 methods** a class, counting its own and those it inherits from the
project's classes (every ``def`` of the class and of its project bases, once by name:
methods, properties, dunders), in the same packages and ``bench``. Exempt: exceptions,
the simulators (a simulated device answers its whole protocol, every message one method)
and the rules core's games and deals (``firmware_host/games/``: a game implements the
whole ``Game`` interface, its rules follow its regulation's articles and stay in one
place, as the module-size test exempts them).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The packages with no mixin chain.
SHAPED = ("firmware_host", "drivers", "tablesim", "tableview", "flooringest")
#: The packages whose classes have at most :data:`MAX_METHODS` methods.
SIZED = (*SHAPED, "bench")
MAX_METHODS = 30
#: Modules of ``drivers`` that simulate devices (and what derives from their classes).
SIMULATOR_MODULES = ("sim", "model", "simulators", "testing")
SIMULATOR_EXTRA = ("drivers.reflink.device",)
#: Classes of parallel work not merged yet, each with where it is being done; remove a
#: line once that work is merged (the test then holds for it too).
PENDING: dict[str, str] = {}


def _module_names(package: str) -> list[str]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts.pop()
        out.append(".".join(parts))
    return out


def project_classes(packages: tuple[str, ...]) -> list[type]:
    """Every class defined in a module of ``packages`` (imported)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # bench is not an installed package
    found: list[type] = []
    for package in packages:
        for name in _module_names(package):
            module = importlib.import_module(name)
            for _, obj in inspect.getmembers(module, inspect.isclass):
                if obj.__module__ == name:
                    found.append(obj)
    return found


def qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def is_project(cls: type) -> bool:
    return cls.__module__.split(".")[0] in SIZED


def project_bases(cls: type) -> list[type]:
    return [b for b in cls.__bases__ if is_project(b)]


def is_protocol(cls: type) -> bool:
    return bool(getattr(cls, "_is_protocol", False))


def is_simulator(cls: type) -> bool:
    for c in cls.__mro__:
        module = c.__module__
        if module.startswith("drivers.") and (
            module.rsplit(".", 1)[-1] in SIMULATOR_MODULES or module in SIMULATOR_EXTRA
        ):
            return True
    return False


def is_device_event(cls: type) -> bool:
    from drivers.base import DeviceEvent

    return issubclass(cls, DeviceEvent)


def is_game(cls: type) -> bool:
    return cls.__module__.startswith("firmware_host.games.")


def methods(cls: type) -> set[str]:
    """The names of the functions defined by ``cls`` and by its project bases."""
    names: set[str] = set()
    for c in cls.__mro__:
        if c is cls or is_project(c):
            names.update(
                n
                for n, v in vars(c).items()
                if inspect.isfunction(v) or isinstance(v, (property, staticmethod, classmethod))
            )
    return names


def chains(classes: list[type]) -> list[str]:
    """Each class of ``classes`` that derives from a project class other than an
    interface of one level (and is not exempt), with why."""
    derived: dict[type, list[type]] = {}
    for cls in classes:
        for base in project_bases(cls):
            derived.setdefault(base, []).append(cls)
    found = []
    for cls in classes:
        if (
            issubclass(cls, BaseException)
            or is_protocol(cls)
            or is_device_event(cls)
            or is_simulator(cls)
            or is_game(cls)
            or qualname(cls) in PENDING
        ):
            continue
        for base in project_bases(cls):
            if is_protocol(base):
                continue
            why = []
            if project_bases(base):
                why.append(f"{base.__name__} derives from {project_bases(base)[0].__name__}")
            if dataclasses.is_dataclass(base):
                why.append(f"{base.__name__} is a dataclass")
            heirs = [c for c in derived.get(cls, []) if not is_simulator(c)]
            if heirs:
                why.append(f"{heirs[0].__name__} derives from it")
            if why:
                found.append(f"{qualname(cls)}({base.__name__}): {'; '.join(why)}")
    return sorted(found)


def big_classes(classes: list[type]) -> list[str]:
    """Each class of ``classes`` over :data:`MAX_METHODS` methods (and not exempt)."""
    return sorted(
        f"{qualname(cls)}: {n} methods"
        for cls in classes
        if not (issubclass(cls, BaseException) or is_simulator(cls) or is_game(cls))
        and qualname(cls) not in PENDING
        and (n := len(methods(cls))) > MAX_METHODS
    )


def test_no_class_derives_from_a_project_class_but_an_interface_of_one_level() -> None:
    classes = project_classes(SHAPED)
    assert len(classes) > 300  # the tree was really read
    found = chains(classes)
    assert not found, "compose these instead (a part held, not a base):\n" + "\n".join(found)


def test_no_class_has_more_than_30_methods() -> None:
    found = big_classes(project_classes(SIZED))
    assert not found, "split these into parts:\n" + "\n".join(found)


def test_pending_classes_exist() -> None:
    """A pending line names a class that exists (so a rename does not hide it)."""
    names = {qualname(c) for c in project_classes(("firmware_host",))}
    assert set(PENDING) <= names


def test_the_rules_can_fail() -> None:
    """A chain, a dataclass base and a class of 31 methods are named; an interface of
    one level, an exception family and a Protocol are not."""

    def project(name: str, *bases: type, **body: object) -> type:
        return type(name, bases, {"__module__": "firmware_host.example", **body})

    root = project("Root")
    middle = project("Middle", root)
    leaf = project("Leaf", middle)
    record = dataclasses.dataclass(project("Record"))
    from_record = project("FromRecord", record)
    interface = project("Interface")
    implementation = project("Implementation", interface)
    error = project("Failure", ValueError)
    sub_error = project("SubFailure", error)
    shape = project("Shape", typing.Protocol)
    shaped = project("Shaped", shape)
    found = chains(
        [root, middle, leaf, record, from_record, interface, implementation, error,
         sub_error, shape, shaped]
    )  # fmt: skip
    assert found == [
        "firmware_host.example.FromRecord(Record): Record is a dataclass",
        "firmware_host.example.Leaf(Middle): Middle derives from Root",
        "firmware_host.example.Middle(Root): Leaf derives from it",
    ]
    big = project("Big", **{f"m{i}": lambda self: None for i in range(31)})
    assert big_classes([big, implementation]) == ["firmware_host.example.Big: 31 methods"]
