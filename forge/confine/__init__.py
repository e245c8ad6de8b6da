"""Process confinement for one sandbox child (layer 3 of 4), one module per layer:
`landlock`, `seccomp`, `capabilities`, `rlimits`; `kernel` holds the raw calls they
share and `probe` reports what this machine offers. All kernel interfaces are
called through ctypes (no extra dependency).
"""
