"""The frontend: torch.export graphs into the `aten` dialect. Importing it checks the installed torch first
(`forge.torch_support`): everything here relies on torch's internals of the supported release."""

from forge.torch_support import check_torch

check_torch()
