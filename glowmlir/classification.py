"""image-classifier's output in `glow-profile`: the top-k labels of each image, checked against
expected labels (`-topk`, `-expected-labels`, `-label-offset`, `-compute-softmax`).

Lines are printed as Glow's image-classifier prints them: ` File: <path>` then, tab-separated,
`Label-K1: 7 (probability: 0.9961)`, further labels on lines of their own indented by five tabs,
and ` File: <path> doesn't match index: 5 in the top 1 pairs` for an image whose expected label
is not among them.

Glow prints nothing of this while it profiles; glow-profile prints it in both modes when asked
(`-topk` or `-expected-labels` given), and always when it only classifies (no `-dump-profile`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from glowmlir.errors import GlowError


def parse_labels(text: str) -> list[int]:
    """`-expected-labels=3,7,1` (Glow's comma-separated unsigned list)."""
    try:
        labels = [int(label) for label in text.split(",")]
    except ValueError:
        raise GlowError(f"-expected-labels=\"{text}\": expected comma-separated non-negative integers") from None
    if any(label < 0 for label in labels):
        raise GlowError(f"-expected-labels=\"{text}\": labels are non-negative")
    return labels


@dataclass
class Classifier:
    """Ranks one output per image and counts the images whose expected label is not in the top k."""

    top_k: int = 1
    label_offset: int = 0
    compute_softmax: bool = False
    expected: Sequence[int] = ()
    mismatches: int = 0
    seen: int = 0

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise GlowError(f"-topk={self.top_k}: must be at least 1")

    def check_count(self, images: int) -> None:
        if self.expected and len(self.expected) != images:
            raise GlowError(f"-expected-labels: {len(self.expected)} labels for {images} images (one per image)")

    def classify(self, output: np.ndarray, files: Sequence[str]) -> list[str]:
        """The lines for a batch: `output` is [batch, labels] (other dimensions of size 1)."""
        scores = np.asarray(output, np.float32).reshape(len(files), -1)
        if scores.shape[1] < self.top_k:
            raise GlowError(f"-topk={self.top_k}: the output has only {scores.shape[1]} labels")
        lines = []
        for file, row in zip(files, scores):
            if self.compute_softmax:
                exponentials = np.exp(row - row.max())
                row = exponentials / exponentials.sum()
            ranked = sorted(range(row.size), key=lambda label: -row[label])[:self.top_k]
            labels = [(label - self.label_offset, float(row[label])) for label in ranked]
            lines.append(f" File: {file}" + "\n\t\t\t\t\t".join(
                f"\tLabel-K{k}: {label} (probability: {probability:.4f})"
                for k, (label, probability) in enumerate(labels, 1)))
            if self.expected:
                wanted = self.expected[self.seen]
                if wanted not in [label for label, _ in labels]:
                    self.mismatches += 1
                    lines.append(f" File: {file} doesn't match index: {wanted} in the top {self.top_k} pairs")
            self.seen += 1
        return lines

    def summary(self) -> str:
        matched = self.seen - self.mismatches
        return f"{matched} of {self.seen} images have their expected label in the top {self.top_k}"
