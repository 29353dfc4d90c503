"""The configuration tables of docs/operating/configuration.md, generated from `Settings` and `RunContext`.

`python -m graph.settings_table` prints both tables; `python -m graph.settings_table --write FILE` puts them
between the file's `<!-- settings table -->` and `<!-- end of settings table -->` lines. `tests/project/test_docs.py`
fails when the page holds anything else, so the table cannot drift from the code.
"""

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic.fields import FieldInfo

from graph.run_context import RunContext
from graph.settings import HistoryKeep, Settings

BEGIN = "<!-- settings table -->"
END = "<!-- end of settings table -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _setting_default(default: Any) -> str:
    if default in (None, "", ()):
        return "unset"
    if isinstance(default, HistoryKeep):
        return f"`{default.count}`" if default.days is None else f"`{default.count},{default.days:g}d`"
    if isinstance(default, float) and default.is_integer():
        default = int(default)
    return f"`{default}`"


def _setting_values(info: FieldInfo) -> str:
    if get_origin(info.annotation) is Literal:
        return " / ".join(f"`{choice}`" for choice in get_args(info.annotation))
    low = high = None
    for rule in info.metadata:
        low = getattr(rule, "ge", None) if getattr(rule, "ge", None) is not None else low
        low = f"> {rule.gt}" if getattr(rule, "gt", None) is not None else low
        high = getattr(rule, "le", None) if getattr(rule, "le", None) is not None else high
    if isinstance(low, str):
        return low
    if low is not None and high is not None:
        return f"{low:,} to {high:,}"
    return f"≥ {low:,}" if low is not None else ""


def environment_table() -> str:
    """The operator's settings: one row per environment variable of `Settings`."""
    rows = ["| environment variable | meaning | default | values |", "|---|---|---|---|"]
    for info in Settings.model_fields.values():
        rows.append(
            f"| `{info.alias}` | {_cell(info.description or '')} | {_setting_default(info.default)} "
            f"| {_setting_values(info)} |"
        )
    return "\n".join(rows)


def _run_default(setting: dataclasses.Field) -> str:
    if setting.default is dataclasses.MISSING:
        return "from the environment"
    return f"`{setting.default}`" if setting.default != "" else "empty"


def _run_values(setting: dataclasses.Field) -> str:
    if "bounds" in setting.metadata:
        low, high = setting.metadata["bounds"]
        return f"{low:,} to {high:,}"
    return " / ".join(f"`{choice}`" for choice in setting.metadata.get("choices", ()))


def run_table() -> str:
    """The per-run settings: one row per field of `RunContext` (`config["configurable"]` or `context=`)."""
    rows = ["| run setting | meaning | default | values |", "|---|---|---|---|"]
    for setting in dataclasses.fields(RunContext):
        rows.append(
            f"| `{setting.name}` | {_cell(setting.metadata.get('description', ''))} | {_run_default(setting)} "
            f"| {_run_values(setting)} |"
        )
    return "\n".join(rows)


def tables() -> str:
    """Both tables, as they stand between the page's markers."""
    return f"{environment_table()}\n\n{run_table()}\n"


def replaced(page: str) -> str:
    """The page with the text between its markers replaced by `tables()`."""
    head, marker, rest = page.partition(BEGIN)
    _old, end, tail = rest.partition(END)
    if not marker or not end:
        raise ValueError(f"the page has no {BEGIN} … {END} lines")
    return f"{head}{BEGIN}\n{tables()}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    """Print the tables, or write them into a page between its markers."""
    parser = argparse.ArgumentParser(prog="python -m graph.settings_table", description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, metavar="FILE", help="replace the tables between FILE's markers")
    arguments = parser.parse_args(argv)
    if arguments.write is None:
        sys.stdout.write(tables())
        return 0
    try:
        arguments.write.write_text(replaced(arguments.write.read_text(encoding="utf-8")), encoding="utf-8")
    except (OSError, ValueError) as error:
        print(f"Cannot write the settings tables into {arguments.write}: {error}.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
