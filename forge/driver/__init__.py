"""The drivers: how Forge's layers are put together for a user. One compile is a `Compilation` running a
list of `Stage`s (compilation.py, stages.py); `forge.compile`, `compile_meta`, `load`, generation, the
autotuner and the command lines are such lists."""
