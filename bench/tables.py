"""Printing a bench's figures: a Markdown table or aligned plain text."""

from __future__ import annotations

from collections.abc import Sequence


def print_rows(rows: Sequence[tuple[str, object]], header: str, markdown: bool, width: int = 40) -> None:
    """`rows` of (label, value), under `header` (the Markdown table's first column title)."""
    if markdown:
        print(f"| {header} | |\n|---|---|")
        for label, value in rows:
            print(f"| {label.strip()} | {value} |")
    else:
        for label, value in rows:
            print(f"{label:{width}} {value}")
