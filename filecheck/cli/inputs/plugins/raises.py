"""A plug-in that fails while it is imported."""


SETTINGS = {"alpha": 1}
ALPHA = SETTINGS["beta"]
