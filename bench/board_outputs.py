"""The check every Cortex-M bench makes of a board run: its outputs are the host bundle's."""

from __future__ import annotations

import numpy as np


def check_board_outputs(board_outputs: dict, host_bundle, inputs: dict) -> None:
    """The board's outputs equal `host_bundle`'s on the same inputs: integer outputs bit for
    bit, float ones to 1e-5 relative (the board's float code may contract multiply-adds).
    Raises AssertionError naming the output that differs, so a bench stops on a wrong run."""
    host_outputs = host_bundle.run(inputs)
    assert set(board_outputs) == set(host_outputs), f"board: {sorted(board_outputs)}, host: {sorted(host_outputs)}"
    for name, expected in host_outputs.items():
        got = np.asarray(board_outputs[name]).reshape(expected.shape)
        if np.issubdtype(expected.dtype, np.integer):
            assert np.array_equal(got, expected), f"{name}: the board's outputs differ from the host's"
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=name)
