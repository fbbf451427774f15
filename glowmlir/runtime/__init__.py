"""Running bundles: on the host through ctypes, and on emulated boards through QEMU."""
