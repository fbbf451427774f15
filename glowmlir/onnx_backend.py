"""glowmlir as an `onnx.backend.base.Backend`, so that onnx's own backend test runner can
drive it: each model is compiled to a host bundle and run through ctypes."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

import glowmlir
from glowmlir.names import legalize_name


class GlowmlirRep(BackendRep):
    def __init__(self, bundle: glowmlir.Bundle, inputs: list[str], outputs: list[str]):
        self.bundle, self.inputs, self.outputs = bundle, inputs, outputs

    def run(self, inputs, **kwargs) -> tuple[np.ndarray, ...]:
        if isinstance(inputs, dict):
            feeds = {legalize_name(k): v for k, v in inputs.items()}
        else:
            feeds = {legalize_name(name): value for name, value in zip(self.inputs, inputs)}
        results = self.bundle.run(feeds)
        return tuple(results[legalize_name(name)] for name in self.outputs)


class GlowmlirBackend(Backend):
    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs) -> bool:
        return True

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs) -> GlowmlirRep:
        super().prepare(model, device, **kwargs)
        initializers = {t.name for t in model.graph.initializer}
        inputs = [i.name for i in model.graph.input if i.name not in initializers]
        outputs = [o.name for o in model.graph.output]
        with tempfile.TemporaryDirectory(prefix="glowmlir-onnx-") as directory:
            path = os.path.join(directory, "model.onnx")
            onnx.save(model, path)
            bundle = glowmlir.compile(path)
        return GlowmlirRep(bundle, inputs, outputs)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs, device: str = "CPU", **kwargs) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return Device(device).type == DeviceType.CPU


