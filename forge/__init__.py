"""Forge: a transparent, pass-by-pass compiler from torch.export graphs to NNFactory on OpenVINO."""
