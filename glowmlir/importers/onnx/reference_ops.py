"""Where onnx's reference evaluator, which folds the nodes whose inputs are all known at
compile time, departs from onnxruntime: its replacements, passed to `ReferenceEvaluator` as
`new_ops`.

* LSTM with `input_forget=1`: ONNX says only "couple the input and forget gates". The
  reference evaluator ignores the attribute; onnxruntime computes the forget gate as
  f = 1 - i (checked in tests/unit/test_onnx_lenient_loading.py); Glow computes the input
  gate as i = 1 - f instead (its stored reference outputs differ from onnxruntime's). We
  follow onnxruntime.
"""

from __future__ import annotations

import numpy as np
from onnx.reference.ops.op_lstm import LSTM as ReferenceLSTM


class LSTM(ReferenceLSTM):
    """The reference LSTM, with `input_forget=1` coupling the gates as onnxruntime does."""

    def _run_forward(self, X, W, R, B, P, H_0, C_0):  # noqa: N803 - ONNX's names
        if not getattr(self, "input_forget", 0):
            return super()._run_forward(X, W, R, B, P, H_0, C_0)
        p_i, p_o, _ = np.split(P, 3)
        hidden, cell, outputs = H_0, C_0, []
        for x in X:
            gates = np.dot(x, np.transpose(W)) + np.dot(hidden, np.transpose(R)) + np.add(*np.split(B, 2))
            i, o, _, c = np.split(gates, 4, -1)
            i = self.f(i + p_i * cell)
            cell = (1 - i) * cell + i * self.g(c)  # the forget gate is 1 - i
            hidden = self.f(o + p_o * cell) * self.h(cell)
            outputs.append(hidden)
        return np.stack(outputs, axis=0), hidden, cell


REPLACEMENTS = [LSTM]
