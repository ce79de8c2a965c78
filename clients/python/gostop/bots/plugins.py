"""Bots from anywhere: a built-in name, ``module:attribute``, or a name an installed package
registers in the ``gostop.bots`` entry-point group; each with options.

A bot *spec* is ``target[:key=value[,key=value...]]``:

- ``greedy``, ``mcts:cpu_millis=100``: a built-in bot and its options;
- ``my_bot:MyBot``, ``my_pkg.strong:Bot:depth=3``: the attribute ``MyBot`` of module ``my_bot``,
  importable from the current directory or installed;
- ``strong``: a bot an installed package declares, in its ``pyproject.toml``,
  ``[project.entry-points."gostop.bots"] strong = "my_pkg.strong:Bot"``.

The attribute is a class or function that builds a bot (called with ``seed=`` when it takes a seed,
and with the options as keywords), or a ready bot object (then it takes no options). What it gives
must have a ``name`` and a ``choose(view, legal)`` method (``gostop.bots.base.Bot``).

>>> parse_spec("mcts:cpu_millis=100,infer=false")
('mcts', {'cpu_millis': 100, 'infer': False})
>>> parse_spec("my_bot:MyBot")
('my_bot:MyBot', {})
>>> make("greedy", seed=1).name
'greedy'
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any, Final

from .base import Bot

__all__ = ["ENTRY_POINT_GROUP", "SPEC_HELP", "BotSpecError", "make", "parse_spec", "registered_names", "split_specs"]

ENTRY_POINT_GROUP: Final = "gostop.bots"
SPEC_HELP: Final = ("random, greedy, mcts, module:attribute or an installed gostop.bots entry point; "
                    "options as :key=value,...")
"""What a command's help says a bot spec may be."""


class BotSpecError(ValueError):
    """A bot spec that names no bot, or whose bot cannot be built; says which and why."""


def _value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """The target of a spec and its options (numbers and true/false converted)."""
    parts = spec.strip().split(":")
    target = [p for p in parts if "=" not in p]
    options: dict[str, Any] = {}
    for part in (p for p in parts if "=" in p):
        for item in part.split(","):
            key, sep, value = item.partition("=")
            if not sep or not key.strip().isidentifier():
                raise BotSpecError(f"bot {spec!r}: options are key=value, not {item!r}")
            options[key.strip()] = _value(value.strip())
    if not target or not all(target):
        raise BotSpecError(f"bot {spec!r}: no bot named")
    return ":".join(target), options


def split_specs(text: str) -> list[str]:
    """A comma-separated list of specs, where a spec's own options may hold commas.

    >>> split_specs("greedy, mcts:cpu_millis=50,infer=false,my_bot:MyBot")
    ['greedy', 'mcts:cpu_millis=50,infer=false', 'my_bot:MyBot']
    """
    out: list[str] = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        if out and "=" in item and ":" not in item:
            out[-1] += "," + item  # another option of the spec before
        else:
            out.append(item)
    return out


def _import(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    if ":" in attribute or not attribute:
        raise BotSpecError(f"bot {target!r}: expected module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        if exc.name != module_name.split(".")[0] or here in sys.path:
            raise BotSpecError(f"bot {target!r}: cannot import {module_name!r} ({exc})") from None
        sys.path.insert(0, here)  # "importable from the current directory", as `python -m` would have it
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as again:
            raise BotSpecError(f"bot {target!r}: cannot import {module_name!r} ({again})") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise BotSpecError(f"bot {target!r}: module {module_name!r} has no attribute {attribute!r}") from None


def _registered(name: str) -> Any | None:
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == name:
            try:
                return entry.load()
            except Exception as exc:
                raise BotSpecError(f"bot {name!r} (entry point {entry.value!r}): cannot load it ({exc})") from None
    return None


def registered_names() -> tuple[str, ...]:
    """The bots installed packages register in the ``gostop.bots`` group."""
    return tuple(sorted({entry.name for entry in entry_points(group=ENTRY_POINT_GROUP)}))


def _build(maker: Any, spec: str, seed: int, options: dict[str, Any]) -> Bot:
    if inspect.isclass(maker) or (callable(maker) and not hasattr(maker, "choose")):
        kwargs = dict(options)
        try:
            parameters: Mapping[str, inspect.Parameter] = inspect.signature(maker).parameters
        except (TypeError, ValueError):
            parameters = {}
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        if "seed" in parameters or takes_any:
            kwargs.setdefault("seed", seed)
        try:
            bot = maker(**kwargs)
        except TypeError as exc:
            raise BotSpecError(f"bot {spec!r}: cannot build it with {sorted(kwargs)} ({exc})") from None
    else:
        if options:
            raise BotSpecError(f"bot {spec!r} is a ready object: it takes no options")
        bot = maker
    if not callable(getattr(bot, "choose", None)) or not isinstance(getattr(bot, "name", None), str):
        raise BotSpecError(f"bot {spec!r} has no name and choose(view, legal): not a bot")
    checked: Bot = bot
    return checked


def make(spec: str, seed: int = 0, **options: Any) -> Bot:
    """Build the bot of ``spec`` with ``seed``; keyword ``options`` add to (and override) the spec's."""
    from . import BUILTIN_BOTS as builtins

    target, spec_options = parse_spec(spec)
    spec_options.update(options)
    if ":" in target:
        return _build(_import(target), spec, seed, spec_options)
    if target in builtins:
        try:
            return builtins[target](seed=seed, **spec_options)
        except TypeError as exc:
            raise BotSpecError(f"bot {spec!r}: {exc}") from None
    maker = _registered(target)
    if maker is None:
        known = ", ".join([*builtins, *registered_names()])
        raise BotSpecError(f"unknown bot {target!r}; known: {known}, or module:attribute of your own")
    return _build(maker, spec, seed, spec_options)
