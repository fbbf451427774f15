"""Backends: one folder per instruction set or kernel library, each holding its kernel
selection pass(es), its data layouts, its kernel emitters and its cost figures."""
