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


def print_columns(header: Sequence[str], rows: Sequence[Sequence[object]], markdown: bool) -> None:
    """A table of `rows` under `header` (one title per column), each column as wide as its widest cell."""
    if markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(str(cell) for cell in row) + " |")
        return
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    for row in (header, *rows):
        print("  ".join(f"{str(cell):{width}}" for cell, width in zip(row, widths)).rstrip())
