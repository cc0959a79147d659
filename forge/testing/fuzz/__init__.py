"""The differential fuzzer (issue 28): every overload of the `aten` table against torch's own kernels."""
