"""Test-only helpers shipped with the package so that `forge-opt` can load them.

`forge.testing.passes` holds passes registered in forge-opt only when the environment
variable `FORGE_TEST_PASSES=1` is set (lit tests of the driver's debugging flags use them).
"""
