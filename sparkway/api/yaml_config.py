"""``pw.load_yaml``: YAML configuration files that build Python objects.

Besides plain YAML, a configuration may hold

* **tagged mappings**, ``!pw.io.fs.read {path: ..., format: csv}``: the tag is the dotted
  path of a callable (``pw.`` stands for sparkway), called with the mapping as keyword
  arguments; a tag on an empty value names an object as it is (a callable is called with
  no arguments, which is deprecated: write ``{}``);
* **variables**: a key ``$name`` of a mapping defines ``name`` for the mapping's values
  (and everything nested in them) and is not part of the result; a plain scalar
  ``$name`` is the variable's value, built once however often it is used. A name no
  mapping defines is read from the environment (a number or a boolean is parsed, any
  other text stays a string).
"""

from __future__ import annotations

import importlib
import io
import os
import re
import warnings
from dataclasses import dataclass
from typing import Any

import yaml

_VARIABLE_TAG = "tag:sparkway,2026:variable"


@dataclass(frozen=True)
class _Variable:
    """A ``$name`` scalar: a reference to a variable (or, as a key, its definition)."""

    name: str


@dataclass(eq=False)
class _Call:
    """A tagged mapping: ``factory(**arguments)``, called when the configuration is resolved."""

    factory: Any
    arguments: dict[Any, Any]


def _import_object(path: str) -> Any:
    """The object a tag names: ``package.module.attr`` (the longest importable module,
    then attributes) or ``package.module:attr``; ``pw.`` is sparkway, or else a
    ``pathway`` package when one is importable (a program written for Pathway)."""
    if path.startswith(("pw.", "pw:")):
        for package in ("sparkway", "pathway"):
            try:
                return _import_object(package + path[2:])
            except (ImportError, AttributeError):
                continue
        raise ImportError(f"sparkway has no {path[3:]!r}")
    module_path, colon, attributes = path.partition(":")
    if colon:
        found: Any = importlib.import_module(module_path)
        names = attributes.split(".") if attributes else []
    else:
        found, names = _longest_module(module_path.split("."))
    for name in names:
        found = getattr(found, name)
    return found


def _longest_module(names: list[str]) -> tuple[Any, list[str]]:
    """The module of the longest importable prefix of ``names``, and the names after it."""
    for end in range(len(names), 0, -1):
        prefix = ".".join(names[:end])
        try:
            return importlib.import_module(prefix), names[end:]
        except ModuleNotFoundError as error:
            if error.name is None or not f"{prefix}.".startswith(f"{error.name}."):
                raise  # the module exists but something it imports does not
            continue
    raise ImportError(f"no module {names[0]!r}")


class _Loader(yaml.SafeLoader):
    """YAML with tagged mappings and ``$`` variables, left unresolved (``_Call``, ``_Variable``)."""

    def construct_variable(self, node: yaml.ScalarNode) -> _Variable:
        name = self.construct_scalar(node)[1:]
        if not name.isidentifier():
            raise yaml.constructor.ConstructorError(
                None, None, f"variable name ${name} is not an identifier (letters, digits and _)", node.start_mark
            )
        return _Variable(name)

    def construct_tagged(self, suffix: str, node: yaml.Node) -> Any:
        try:
            target = _import_object(suffix)
        except (ImportError, AttributeError) as error:
            raise yaml.constructor.ConstructorError(
                None, None, f"tag !{suffix} names no Python object ({error})", node.start_mark
            ) from None
        if isinstance(node, yaml.ScalarNode) and node.value == "":
            if not callable(target):
                return target
            warnings.warn(
                f"!{suffix} without a mapping calls it with no arguments; this is deprecated, "
                "write `{}` after the tag to call it",
                DeprecationWarning,
                stacklevel=2,
            )
            return _Call(target, {})
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(
                None, None, f"!{suffix} takes a mapping of keyword arguments (or nothing)", node.start_mark
            )
        if not callable(target):
            raise yaml.constructor.ConstructorError(None, None, f"!{suffix} is not callable", node.start_mark)
        return _Call(target, self.construct_mapping(node, deep=True))


_Loader.add_implicit_resolver(_VARIABLE_TAG, re.compile(r"^\$"), ["$"])
_Loader.add_constructor(_VARIABLE_TAG, _Loader.construct_variable)
_Loader.add_multi_constructor("!", _Loader.construct_tagged)


_BUILDING = object()  # a variable whose value is being built (to report a cycle)


class _Scope:
    """The variables a mapping defines, built on first use; inner scopes see outer ones."""

    def __init__(self, definitions: dict[str, Any], parent: "_Scope | None", built: dict[int, Any]) -> None:
        self.definitions, self.parent, self.built = definitions, parent, built
        self.values: dict[str, Any] = {}

    def value_of(self, name: str) -> Any:
        if name not in self.definitions:
            return self.parent.value_of(name) if self.parent is not None else _environment_variable(name)
        if self.values.get(name) is _BUILDING:
            raise ValueError(f"YAML variable ${name} is defined in terms of itself")
        if name not in self.values:
            self.values[name] = _BUILDING
            self.values[name] = _resolve(self.definitions[name], self)
        return self.values[name]

    def warn_unused(self) -> None:
        for name in self.definitions.keys() - self.values.keys():
            warnings.warn(f"YAML variable ${name} is defined and never used", stacklevel=4)


def _environment_variable(name: str) -> Any:
    """``$NAME`` that no mapping defines: the environment variable, a number or boolean parsed."""
    text = os.environ.get(name)
    if text is None:
        raise KeyError(f"YAML variable ${name} is not defined (by a `${name}:` key or in the environment)")
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return parsed if isinstance(parsed, (bool, int, float)) else text


def _resolve(value: Any, scope: _Scope) -> Any:
    """``value`` with its variables replaced and its tagged mappings called."""
    if isinstance(value, _Variable):
        return scope.value_of(value.name)
    if isinstance(value, _Call):
        if id(value) not in scope.built:  # a YAML alias (*name) of a call is one object
            scope.built[id(value)] = value.factory(**_resolve(value.arguments, scope))
        return scope.built[id(value)]
    if isinstance(value, dict):
        return _resolve_mapping(value, scope)
    if isinstance(value, list):
        return [_resolve(item, scope) for item in value]
    return value


def _resolve_mapping(mapping: dict[Any, Any], scope: _Scope) -> dict[Any, Any]:
    definitions = {k.name: v for k, v in mapping.items() if isinstance(k, _Variable)}
    inner = _Scope(definitions, scope, scope.built) if definitions else scope
    result = {k: _resolve(v, inner) for k, v in mapping.items() if not isinstance(k, _Variable)}
    if definitions:
        inner.warn_unused()
    return result


def load_yaml(stream: str | bytes | io.IOBase) -> Any:
    """The configuration in a YAML text or file, with its tagged mappings built and its
    variables replaced (see the module's description).

    >>> import sparkway as pw
    >>> config = pw.load_yaml('''
    ... $kind: !pw.Json
    ...   value: {"name": "events"}
    ... first: $kind
    ... both: [$kind, $kind]
    ... ''')
    >>> config["first"]
    pw.Json({'name': 'events'})
    >>> config["both"][0] is config["first"]
    True
    """
    parsed = yaml.load(stream, _Loader)  # noqa: S506 - _Loader is a SafeLoader
    return _resolve(parsed, _Scope({}, None, {}))
